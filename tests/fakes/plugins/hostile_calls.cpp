// A plugin that breaks the ABI's rules about calls ending, written against the raw C ABI (the C++
// helper would keep it from it). argv[0] of a run, or of a session's exec, picks the behaviour:
//   deaf RELEASE       -> says "deaf run started" on stdout, then ignores every kill and does not
//                         return until the file RELEASE exists (a run that never returns, until
//                         the test lets it); its box is listed, and inspect says RUNNING, meanwhile
//   late-sinks GO DONE -> says "on time" on stdout and returns 0; a thread of its own waits until
//                         the file GO exists, then calls the output and error sinks 100 times
//                         each, through the structs' addresses it kept and through copies of
//                         them, then makes the file DONE (a plugin calling its sinks after its run
//                         returned)
//   echo WORDS...      -> WORDS joined by spaces and "\n" on stdout, exit 0
// It honours every field a spec carries, and offers radial.session/1 (create, exec, destroy).
#include <radial/runtime_plugin.h>
#include <radial/session.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

radial_str str(const std::string& s) { return {s.data(), s.size()}; }
std::string text(radial_str s) { return std::string(s.data, s.size); }

std::mutex g_mutex;
std::set<std::string> g_active; // labels of runs under way and of sessions

bool exists(const std::string& path) {
    std::error_code ec;
    return std::filesystem::exists(path, ec);
}

void say(const radial_output_sink* out, const std::string& line) {
    out->write(out->ctx, RADIAL_STREAM_STDOUT, reinterpret_cast<const std::uint8_t*>(line.data()),
               line.size());
}

std::vector<std::string> argv_of(const radial_spec* spec) {
    std::vector<std::string> argv;
    for (std::size_t i = 0; i < spec->argv.count; ++i)
        argv.push_back(text(*reinterpret_cast<const radial_str*>(
            static_cast<const char*>(spec->argv.items) + i * spec->argv.elem_size)));
    return argv;
}

std::int32_t h_run(radial_runtime*, const radial_spec* spec, const radial_output_sink* out,
                   radial_run_result* r, const radial_error_sink* err) noexcept {
    const std::vector<std::string> argv = argv_of(spec);
    const std::string label = text(spec->label);
    if (argv.empty()) return RADIAL_E_INVALID;
    if (argv[0] == "deaf" && argv.size() == 2) {
        {
            std::lock_guard lock(g_mutex);
            g_active.insert(label);
        }
        say(out, "deaf run started\n");
        while (!exists(argv[1])) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        std::lock_guard lock(g_mutex);
        g_active.erase(label);
        r->flags = RADIAL_RUN_KILLED;
        return RADIAL_OK;
    }
    if (argv[0] == "late-sinks" && argv.size() == 3) {
        say(out, "on time\n");
        const radial_output_sink out_copy = *out;
        const radial_error_sink err_copy = *err;
        std::thread([out, err, out_copy, err_copy, go = argv[1], done = argv[2]] {
            while (!exists(go)) std::this_thread::sleep_for(std::chrono::milliseconds(10));
            const std::string late = "LATE\n";
            const auto* bytes = reinterpret_cast<const std::uint8_t*>(late.data());
            for (int i = 0; i < 100; ++i) {
                out->write(out->ctx, RADIAL_STREAM_STDOUT, bytes, late.size());
                out_copy.write(out_copy.ctx, RADIAL_STREAM_STDERR, bytes, late.size());
                err->report(err->ctx, RADIAL_E_INTERNAL, str("late"), str(late));
                err_copy.report(err_copy.ctx, RADIAL_E_INTERNAL, str("late"), str(late));
            }
            std::ofstream(done) << "done\n";
        }).detach();
        r->flags = RADIAL_RUN_EXITED;
        return RADIAL_OK;
    }
    if (argv[0] == "echo") {
        std::string line;
        for (std::size_t i = 1; i < argv.size(); ++i) line += (i > 1 ? " " : "") + argv[i];
        say(out, line + "\n");
        r->flags = RADIAL_RUN_EXITED;
        return RADIAL_OK;
    }
    const std::string m = "hostile calls: unknown command '" + argv[0] + "'";
    err->report(err->ctx, RADIAL_E_INVALID, str("argv"), str(m));
    return RADIAL_E_INVALID;
}

int g_instance;

std::int32_t h_create(const radial_host*, const radial_config*, radial_runtime** out,
                      const radial_error_sink*) noexcept {
    *out = reinterpret_cast<radial_runtime*>(&g_instance);
    return RADIAL_OK;
}
void h_destroy(radial_runtime*) noexcept {}

std::int32_t h_describe(radial_runtime*, const radial_spec*, const radial_disposition_sink* out,
                        const radial_error_sink*) noexcept {
    for (std::uint32_t f = RADIAL_FIELD_LABEL; f <= 64; ++f)
        out->field(out->ctx, f, RADIAL_DISP_HONOURED, str(""));
    return RADIAL_OK;
}

std::int32_t h_list(radial_runtime*, radial_str prefix, const radial_name_sink* names,
                    const radial_error_sink*) noexcept {
    std::lock_guard lock(g_mutex);
    for (const auto& l : g_active)
        if (l.compare(0, prefix.size, prefix.data, prefix.size) == 0)
            names->add(names->ctx, str(l));
    return RADIAL_OK;
}

std::int32_t h_kill(radial_runtime*, radial_str, const radial_error_sink*) noexcept {
    return RADIAL_OK; // heard, and ignored
}

std::int32_t h_inspect(radial_runtime*, radial_str label, radial_box_state* st,
                       const radial_error_sink*) noexcept {
    std::lock_guard lock(g_mutex);
    st->state = g_active.count(text(label)) ? RADIAL_BOX_RUNNING : RADIAL_BOX_GONE;
    return RADIAL_OK;
}

std::int32_t s_create(radial_runtime*, const radial_spec* spec, std::uint64_t, std::uint64_t,
                      const radial_error_sink*) noexcept {
    std::lock_guard lock(g_mutex);
    g_active.insert(text(spec->label));
    return RADIAL_OK;
}
std::int32_t s_destroy(radial_runtime*, radial_str label, const radial_error_sink*) noexcept {
    std::lock_guard lock(g_mutex);
    g_active.erase(text(label));
    return RADIAL_OK;
}

const radial_session_ext g_sessions = [] {
    radial_session_ext s{};
    s.struct_size = sizeof s;
    s.create = s_create;
    s.exec = h_run;
    s.destroy = s_destroy;
    return s;
}();

const void* h_extension(radial_runtime*, const char* id) noexcept {
    return std::string(id) == RADIAL_SESSION_EXTENSION_ID ? &g_sessions : nullptr;
}

} // namespace

extern "C" RADIAL_RT_EXPORT const radial_runtime_descriptor* radial_runtime_plugin_entry(void) {
    static const radial_runtime_descriptor d = [] {
        radial_runtime_descriptor x{};
        x.struct_size = sizeof x;
        x.abi_major = RADIAL_RT_ABI_MAJOR;
        x.abi_minor = RADIAL_RT_ABI_MINOR;
        x.id = {"hostile", 7};
        x.name = {"hostile calls", 13};
        x.version = {"0.0.1", 5};
        x.create = h_create;
        x.destroy = h_destroy;
        x.run = h_run;
        x.describe_spec = h_describe;
        x.list_by_label = h_list;
        x.kill = h_kill;
        x.get_extension = h_extension;
        x.inspect = h_inspect;
        return x;
    }();
    return &d;
}
