// Checks of what a run does with the workload: exit codes, the two streams, large and binary
// output, env values, secrets, the working directory and mounts (docs/design.md §5.11; reference
// §8.17 17-20, 24). The image needs a POSIX sh with printf, seq, head, tr, cat, pwd and sleep
// (busybox has them all).
#include <random>
#include <thread>

#include "checks.h"
#include "host_probe.h"

namespace radial::conformance {
namespace {

using namespace std::chrono_literals;

// Verifies, chunk by chunk, that a stream is exactly `count` lines numbering up from `first`,
// zero-padded to `width` digits (what `seq -w` prints), without keeping the stream.
class NumberedLines {
public:
    NumberedLines(std::uint64_t first, std::uint64_t count, int width)
        : first_(first), count_(count), width_(width) {}

    void feed(std::string_view bytes) {
        for (char c : bytes) {
            if (!problem_.empty()) return;
            if (c != '\n') {
                if (line_.size() > 32) return fail("a line longer than expected");
                line_.push_back(c);
                continue;
            }
            std::string want = expected(first_ + next_);
            if (next_ >= count_)
                return fail("more lines than the " + std::to_string(count_) + " written");
            if (line_ != want)
                return fail("line " + std::to_string(next_ + 1) + " is '" + printable(line_) +
                            "', expected '" + want + "' (lost, repeated or reordered bytes)");
            ++next_;
            line_.clear();
        }
    }
    // Empty when the stream was complete and in order.
    std::string verdict() const {
        if (!problem_.empty()) return problem_;
        if (!line_.empty()) return "the stream ends with a partial line '" + printable(line_) + "'";
        if (next_ != count_)
            return "the stream ended after " + std::to_string(next_) + " of " +
                   std::to_string(count_) + " lines";
        return {};
    }

private:
    std::string expected(std::uint64_t n) const {
        std::string s = std::to_string(n);
        return std::string(s.size() < static_cast<std::size_t>(width_) ? width_ - s.size() : 0,
                           '0') +
               s;
    }
    void fail(const std::string& why) { problem_ = why; }

    std::uint64_t first_;
    std::uint64_t count_;
    int width_;
    std::uint64_t next_ = 0;
    std::string line_;
    std::string problem_;
};

std::string octal_escapes_0_to_255() {
    std::string s;
    for (int i = 0; i < 256; ++i) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\%03o", i);
        s += buf;
    }
    return s;
}

std::string random_hex(std::size_t n) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    std::random_device rd;
    for (std::size_t i = 0; i < n; ++i) s.push_back(digits[rd() % 16]);
    return s;
}

} // namespace

CONFORMANCE_CHECK(run_exit_codes, Gate::ready,
                  "run reports exit codes 0, 1, 2, 42, 126, 127 and 255 exactly, as EXITED, and "
                  "a workload ended by SIGKILL or SIGTERM as SIGNALED with that signal (or "
                  "EXITED 128+signal, as an init process reports it).") {
    // Concurrently: seven boxes one after the other would make this the slowest check.
    struct Pending {
        std::string label, what;
        int code = 0;   // the exit code expected, or
        int signal = 0; // the signal expected
        PendingCall<RunObservation> call;
    };
    std::vector<Pending> runs;
    for (int code : {0, 1, 2, 42, 126, 127, 255}) {
        std::string l = label("exit" + std::to_string(code));
        std::string script = "exit " + std::to_string(code);
        runs.push_back(
            {l, "run of `sh -c '" + script + "'`", code, 0,
             instance().start_run(shell_spec(l, script), std::make_shared<OutputCapture>())});
    }
    for (int sig : {9, 15}) {
        std::string l = label("signal" + std::to_string(sig));
        std::string script = "kill -" + std::to_string(sig) + " $$";
        runs.push_back(
            {l, "run of `sh -c '" + script + "'`", 0, sig,
             instance().start_run(shell_spec(l, script), std::make_shared<OutputCapture>())});
    }
    for (auto& r : runs) {
        RunObservation o = finish(r.call, r.label, budget());
        if (!expect_ran(o, r.what)) continue;
        if (r.signal == 0) {
            EXPECT_TRUE((o.outcome.flags & RADIAL_RUN_EXITED) && o.outcome.exit_code == r.code)
                << r.what << " " << outcome_text(o) << "; expected EXITED with exactly " << r.code
                << " (a harness tells 2 from 1 and 127 from 126: pass the code through as it is)";
            continue;
        }
        bool signaled =
            (o.outcome.flags & RADIAL_RUN_SIGNALED) && o.outcome.term_signal == r.signal;
        bool exited =
            (o.outcome.flags & RADIAL_RUN_EXITED) && o.outcome.exit_code == 128 + r.signal;
        EXPECT_TRUE(signaled || exited)
            << r.what << " " << outcome_text(o) << "; expected SIGNALED with signal " << r.signal
            << " or EXITED " << 128 + r.signal;
    }
}

CONFORMANCE_CHECK(run_streams_apart_in_order, Gate::ready,
                  "stdout and stderr arrive on their own streams, each complete and in order, "
                  "while the workload interleaves them.") {
    const int n = 2000;
    std::string l = label("streams");
    auto capture = std::make_shared<OutputCapture>();
    RunObservation o =
        run(shell_spec(l, "i=0; while [ $i -lt " + std::to_string(n) +
                              " ]; do echo \"out $i\"; echo \"err $i\" >&2; i=$((i+1)); done"),
            capture);
    if (!expect_ran(o, "run of an interleaving loop")) return;
    std::string want_out, want_err;
    for (int i = 0; i < n; ++i) {
        want_out += "out " + std::to_string(i) + "\n";
        want_err += "err " + std::to_string(i) + "\n";
    }
    EXPECT_TRUE(capture->out == want_out)
        << "stdout of a loop writing 'out N' lines to stdout and 'err N' to stderr was not "
           "exactly the out lines in order: got '"
        << printable(capture->out) << "'";
    EXPECT_TRUE(capture->err == want_err)
        << "stderr of the same loop was not exactly the err lines in order: got '"
        << printable(capture->err) << "'";
    expect_clean_sink(*capture, "the interleaving loop");
}

CONFORMANCE_CHECK(run_streams_incrementally, Gate::ready,
                  "Output is delivered as it is produced, not when the box ends.") {
    std::string l = label("incremental");
    auto capture = std::make_shared<OutputCapture>();
    RunObservation o = run(shell_spec(l, "echo first; sleep 3; echo second"), capture);
    if (!expect_ran(o, "run of `echo first; sleep 3; echo second`")) return;
    EXPECT_EQ(capture->out, "first\nsecond\n");
    ASSERT_GT(capture->chunks, 0u);
    double first = std::chrono::duration<double>(capture->first_chunk - o.started).count();
    EXPECT_LT(first + 1.5, o.seconds())
        << "the first chunk ('first') arrived " << secs(first) << " after run started, and run "
        << "returned after " << secs(o.seconds()) << "; output written 3 s before the end must "
        << "arrive before the end";
}

CONFORMANCE_CHECK(run_large_output, Gate::ready,
                  "64 MiB on stdout (and 1 MiB on stderr at the same time) arrive complete and in "
                  "order, streamed with bounded memory in the host process.") {
    const std::uint64_t out_lines = 8'388'608; // 8-byte lines: 64 MiB
    const std::uint64_t err_lines = 131'072;   // 1 MiB
    auto out_check = std::make_shared<NumberedLines>(0, out_lines, 7);
    auto err_check = std::make_shared<NumberedLines>(1'000'000, err_lines, 7);
    auto capture = std::make_shared<OutputCapture>();
    capture->keep = false;
    capture->hook = [out_check, err_check](std::uint32_t stream, std::string_view bytes) {
        (stream == RADIAL_STREAM_STDOUT ? *out_check : *err_check).feed(bytes);
        return true;
    };
    std::string l = label("large");
    // Both streams at once, 8-byte lines each: stdout 0000000.., stderr 1000000...
    std::string script = "seq -w 0 " + std::to_string(out_lines - 1) + " & seq 1000000 " +
                         std::to_string(1'000'000 + err_lines - 1) + " >&2; wait";
    bool reset = reset_peak_rss();
    long before = reset ? rss_kib() : peak_rss_kib();
    RunObservation o = run(shell_spec(l, script), capture, budget() * 4);
    long peak = peak_rss_kib();
    if (!expect_ran(o, "run writing 64 MiB")) return;
    EXPECT_EQ(o.outcome.exit_code, 0) << "the run writing 64 MiB " << outcome_text(o);
    std::string out_problem = out_check->verdict(), err_problem = err_check->verdict();
    EXPECT_TRUE(out_problem.empty()) << "stdout of `seq -w 0 " << out_lines - 1 << "` ("
                                     << capture->out_bytes << " bytes arrived): " << out_problem;
    EXPECT_TRUE(err_problem.empty())
        << "stderr (" << capture->err_bytes << " bytes arrived): " << err_problem;
    const long bound_kib = 32 * 1024;
    if (before >= 0 && peak >= 0) {
        EXPECT_LT(peak - before, bound_kib)
            << "the host process grew by " << (peak - before) / 1024 << " MiB while 64 MiB "
            << "streamed through it; a plugin must stream output, not buffer it (bound: "
            << bound_kib / 1024 << " MiB" << (reset ? "" : ", measured since process start") << ")";
    }
    std::cout << "  " << (capture->out_bytes + capture->err_bytes) / (1 << 20) << " MiB in "
              << capture->chunks << " chunks, " << secs(o.seconds()) << ", host process grew by "
              << (peak - before) / 1024 << " MiB\n";
    expect_clean_sink(*capture, "the 64 MiB run");
}

CONFORMANCE_CHECK(run_binary_and_long_lines, Gate::ready,
                  "Every byte value 0-255 and a 1 MiB line without a newline pass through "
                  "stdout unchanged.") {
    std::string l = label("binary");
    auto capture = std::make_shared<OutputCapture>();
    std::string script =
        "printf '" + octal_escapes_0_to_255() + "'; head -c 1048576 /dev/zero | tr '\\0' x; echo";
    RunObservation o = run(shell_spec(l, script), capture);
    if (!expect_ran(o, "run printing bytes 0-255 and a 1 MiB line")) return;
    std::string want;
    for (int i = 0; i < 256; ++i) want.push_back(static_cast<char>(i));
    want += std::string(1 << 20, 'x') + "\n";
    ASSERT_EQ(capture->out.size(), want.size())
        << "stdout had " << capture->out.size() << " bytes, expected " << want.size()
        << " (256 byte values, 1 MiB of 'x', a newline); stderr: '" << printable(capture->err)
        << "'";
    for (std::size_t i = 0; i < want.size(); ++i)
        if (capture->out[i] != want[i]) {
            ADD_FAILURE() << "stdout byte " << i << " is 0x" << std::hex
                          << (static_cast<unsigned>(capture->out[i]) & 0xff) << ", expected 0x"
                          << (static_cast<unsigned>(want[i]) & 0xff) << std::dec;
            break;
        }
}

CONFORMANCE_CHECK(run_env_byte_exact, Gate::ready,
                  "Env values reach the workload byte for byte: quotes, $, backslashes, "
                  "newlines, ;, tabs, UTF-8 and empty values, secret or not.") {
    const std::vector<std::pair<std::string, std::string>> values = {
        {"RCF_QUOTES", "a \"double\" 'single' \\back\\slash"},
        {"RCF_DOLLAR", "$HOME $(id) ${X} `uname` $$"},
        {"RCF_NEWLINES", "line1\nline2\n\n"},
        {"RCF_SHELL", "semi;colon && pipe | amp & gt > lt < #hash"},
        {"RCF_UTF8", "UTF-8: ünïcødé ✓ 🚀 日本"},
        {"RCF_SPACES", "  leading and trailing  "},
        {"RCF_EQUALS", "key=value=more"},
        {"RCF_CONTROL", "tab\there \x01\x1f\x7f end"},
        {"RCF_EMPTY", ""},
    };
    std::string l = label("env");
    std::string script = "printf '%s\\000'";
    ContainerSpec spec = shell_spec(l, "");
    for (const auto& [name, value] : values) {
        spec.env.push_back({name, value, false});
        script += " \"$" + name + "\"";
    }
    spec.env.push_back({"RCF_SECRET", "secret 'quoted' $x\nnewline;", true});
    script += " \"$RCF_SECRET\"";
    spec.argv = {"sh", "-c", script};
    if (skip_unless_honoured(spec, RADIAL_FIELD_ENV)) return;
    auto capture = std::make_shared<OutputCapture>();
    RunObservation o = run(spec, capture);
    if (!expect_ran(o, "run printing env values")) return;
    std::string_view got = capture->out;
    for (const auto& e : spec.env) {
        auto nul = got.find('\0');
        if (nul == std::string_view::npos) {
            ADD_FAILURE() << "the output ended before " << e.name << "; stdout '"
                          << printable(capture->out) << "', stderr '" << printable(capture->err)
                          << "'";
            return;
        }
        EXPECT_EQ(printable(got.substr(0, nul)), printable(e.value))
            << e.name << (e.secret ? " (secret)" : "")
            << " did not reach the workload byte for byte";
        got.remove_prefix(nul + 1);
    }
}

CONFORMANCE_CHECK(secret_env_not_on_cmdline, Gate::ready,
                  "A secret env value never appears on any process's command line on this host "
                  "while the box runs, nor in the plugin's log; the workload still sees it.") {
    const std::string marker = "rcfsecret" + random_hex(16);
    std::string l = label("secret");
    ContainerSpec spec =
        shell_spec(l, "printf '%s\\n' \"$RCF_TOKEN\"; echo ready; sleep 3; echo done");
    spec.env = {{"RCF_TOKEN", marker, true}};
    if (skip_unless_honoured(spec, RADIAL_FIELD_ENV)) return;
    auto capture = std::make_shared<OutputCapture>();
    auto call = instance().start_run(spec, capture);
    int scans = 0;
    std::string seen_in;
    while (!call.wait_for(150ms)) {
        bool ready;
        {
            std::lock_guard lock(capture->mutex);
            ready = capture->out.find("ready") != std::string::npos;
        }
        if (!ready) continue;
        ++scans;
        for (const auto& cmdline : all_cmdlines())
            if (cmdline.find(marker) != std::string::npos && seen_in.empty())
                seen_in = printable(cmdline, 300);
    }
    RunObservation o = finish(call, l, budget());
    if (!expect_ran(o, "run with a secret env value")) return;
    EXPECT_EQ(capture->out, marker + "\nready\ndone\n") << "the workload did not see the secret";
    EXPECT_GT(scans, 0) << "the harness never saw the box running, so it could not look";
    EXPECT_TRUE(seen_in.empty()) << "the secret env value was on a command line on this host: '"
                                 << seen_in << "'; pass secrets by environment or fd, not argv";
    for (const auto& line : Harness::get().take_log())
        EXPECT_EQ(line.find(marker), std::string::npos)
            << "the plugin logged the secret env value: '" << line << "'";
}

CONFORMANCE_CHECK(run_workdir, Gate::ready, "The workload starts in the spec's workdir.") {
    std::string l = label("workdir");
    ContainerSpec spec = shell_spec(l, "pwd");
    spec.workdir = "/etc";
    if (skip_unless_honoured(spec, RADIAL_FIELD_WORKDIR)) return;
    auto capture = std::make_shared<OutputCapture>();
    RunObservation o = run(spec, capture);
    if (!expect_ran(o, "run of `pwd` with workdir /etc")) return;
    EXPECT_EQ(capture->out, "/etc\n")
        << "`pwd` with workdir /etc printed '" << printable(capture->out) << "' (stderr '"
        << printable(capture->err) << "')";
}

CONFORMANCE_CHECK(run_mounts_ro_rw, Gate::ready,
                  "A read-only mount can be read but not written, and a read-write mount's "
                  "writes appear on the host.") {
    TempDir dir("rcf-mounts");
    std::string ro = dir.subdir("ro", 0777), rw = dir.subdir("rw", 0777);
    dir.write("ro/in.txt", "read-only mount content\n", 0666);
    std::string l = label("mounts");
    ContainerSpec spec =
        shell_spec(l,
                   "cat /radial-ro/in.txt; "
                   "if (echo changed > /radial-ro/in.txt) 2>/dev/null; then echo ro-writable; "
                   "else echo ro-refused; fi; "
                   "if (echo new > /radial-ro/new.txt) 2>/dev/null; then echo ro-creatable; fi; "
                   "echo rw-data > /radial-rw/out.txt && echo rw-ok");
    spec.mounts = {{ro, "/radial-ro", true}, {rw, "/radial-rw", false}};
    if (skip_unless_honoured(spec, RADIAL_FIELD_MOUNTS)) return;
    auto capture = std::make_shared<OutputCapture>();
    RunObservation o = run(spec, capture);
    if (!expect_ran(o, "run with a read-only and a read-write mount")) return;
    EXPECT_EQ(capture->out, "read-only mount content\nro-refused\nrw-ok\n")
        << "the box's view of its mounts was wrong (stderr '" << printable(capture->err) << "')";
    std::string content;
    EXPECT_TRUE(dir.read("ro/in.txt", content) && content == "read-only mount content\n")
        << "the read-only mount's file changed on the host: '" << printable(content) << "'";
    EXPECT_FALSE(dir.read("ro/new.txt", content))
        << "a file appeared on the host through the read-only mount";
    EXPECT_TRUE(dir.read("rw/out.txt", content) && content == "rw-data\n")
        << "the write through the read-write mount did not reach the host (got '"
        << printable(content) << "')";
}

} // namespace radial::conformance
