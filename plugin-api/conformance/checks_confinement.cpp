// Checks that the confinement a plugin reports as honoured is really there, seen from inside the
// box (docs/design.md §5.11, "Confinement probes"): user, read-only root filesystem, tmpfs, no
// network, pids limit and memory. A disposition is a claim; each check runs a small command in the
// box that would see the claim broken. A field reported REFUSED or SUPERSEDED is not probed (the
// check is skipped and says why); HONOURED and BRIDGED are. The image needs a POSIX sh with id,
// awk, df, sed, cut, tr, head, sleep and kill (busybox has them all).
//
// The probes only read, except where the claim has already been seen to hold (the write to / is
// attempted only once /proc/mounts shows / read-only), so that a plugin that runs boxes on the
// host itself (as the zoo does) does not get the host written to.
#include <radial/internal/names.h>

#include <sstream>

#include "checks.h"

namespace radial::conformance {
namespace {

// The lines of `text`, without their newlines.
std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

// The value of the last line "key=value" in `text`, or nullopt.
std::optional<std::string> value_of(const std::string& text, const std::string& key) {
    std::optional<std::string> v;
    for (const auto& line : lines_of(text))
        if (line.rfind(key + "=", 0) == 0) v = line.substr(key.size() + 1);
    return v;
}

// What a /proc/net/dev probe (one interface name per line) saw that a box without a network must
// not have: empty when lo and nothing else, else the box's fault in words.
std::string network_seen(const OutputCapture& c) {
    std::string others;
    bool lo = false;
    for (const auto& name : lines_of(c.out)) {
        if (name == "lo")
            lo = true;
        else if (!name.empty())
            others += (others.empty() ? "" : ", ") + name;
    }
    if (!others.empty()) return "has the interface(s) " + others + " besides lo";
    if (!lo)
        return "lists no interfaces at all ('" + printable(c.out) + "', stderr '" +
               printable(c.err) + "')";
    return {};
}

const char kInterfacesProbe[] = "sed 1,2d /proc/net/dev | cut -d: -f1 | tr -d ' '";

} // namespace

CONFORMANCE_CHECK(confine_user, Gate::ready,
                  "A box given user 4242:4243 runs its workload as uid 4242 and gid 4243 (`id` "
                  "inside the box), when the plugin reports user honoured or bridged.") {
    std::string l = label("user");
    ContainerSpec spec = shell_spec(l, "id -u; id -g");
    spec.user = "4242:4243";
    auto capture = run_probe(spec, RADIAL_FIELD_USER, "run of `id -u; id -g` with user 4242:4243");
    if (!capture) return;
    EXPECT_EQ(capture->out, "4242\n4243\n")
        << "the plugin reports user honoured, but `id -u` and `id -g` in a box with user "
           "4242:4243 printed '"
        << printable(capture->out) << "' (stderr '" << printable(capture->err)
        << "'): run the workload as the spec's uid and gid, or report user REFUSED";
}

CONFORMANCE_CHECK(confine_read_only_rootfs, Gate::ready,
                  "A box with readOnlyRootfs yes has / mounted read-only and cannot write to it, "
                  "when the plugin reports readOnlyRootfs honoured or bridged.") {
    std::string l = label("rofs");
    // The top-most mount on / is the one the workload sees.
    ContainerSpec spec = shell_spec(
        l,
        "opts=$(awk '$2==\"/\"{o=$4} END{print o}' /proc/mounts); echo \"opts=$opts\"; "
        "case \",$opts,\" in *,ro,*) ;; *) echo root=mounted-rw; exit 0;; esac; "
        "if (: > /.rcf-ro-probe) 2>/dev/null; then rm -f /.rcf-ro-probe; echo root=writable; "
        "else echo root=read-only; fi");
    spec.read_only_rootfs = Tristate::yes;
    auto capture = run_probe(spec, RADIAL_FIELD_READ_ONLY_ROOTFS,
                             "run of a probe of / with readOnlyRootfs yes");
    if (!capture) return;
    auto root = value_of(capture->out, "root");
    EXPECT_EQ(root.value_or("(nothing)"), "read-only")
        << "the plugin reports readOnlyRootfs honoured, but in a box with readOnlyRootfs yes / is "
        << (root == "mounted-rw" ? "mounted read-write (its options in /proc/mounts: '" +
                                       value_of(capture->out, "opts").value_or("") + "')"
            : root == "writable" ? "mounted read-only yet a file could be created in it"
                                 : "not what the probe expected: '" + printable(capture->out) +
                                       "' (stderr '" + printable(capture->err) + "')")
        << "; mount the root filesystem read-only, or report readOnlyRootfs REFUSED";
}

CONFORMANCE_CHECK(confine_tmpfs, Gate::ready,
                  "A box given an 8 MiB tmpfs at /rcf-tmpfs has a tmpfs mounted there of that "
                  "size (/proc/mounts and df inside the box), when the plugin reports tmpfs "
                  "honoured or bridged.") {
    const std::uint64_t size = 8u << 20;
    std::string l = label("tmpfs");
    ContainerSpec spec =
        shell_spec(l,
                   "echo \"type=$(awk '$2==\"/rcf-tmpfs\"{t=$3} END{print t}' /proc/mounts)\"; "
                   "echo \"kib=$(df -Pk /rcf-tmpfs 2>/dev/null | awk 'NR==2{print $2}')\"");
    spec.tmpfs = {{"/rcf-tmpfs", size}};
    auto capture = run_probe(spec, RADIAL_FIELD_TMPFS, "run of a probe of a tmpfs at /rcf-tmpfs");
    if (!capture) return;
    std::string type = value_of(capture->out, "type").value_or("");
    std::string kib_text = value_of(capture->out, "kib").value_or("");
    EXPECT_EQ(type, "tmpfs")
        << "the plugin reports tmpfs honoured, but in a box given a tmpfs at /rcf-tmpfs, "
        << (type.empty() ? std::string("nothing is mounted there")
                         : "a " + type + " is mounted there")
        << " (/proc/mounts inside the box); mount a tmpfs at each target, or report tmpfs "
           "REFUSED";
    if (type != "tmpfs") return;
    std::uint64_t kib = 0;
    bool parsed = internal::is_decimal(kib_text, 19) && (kib = std::stoull(kib_text), true);
    // tmpfs rounds its size up to whole pages; 5% either way allows for that and nothing else.
    const std::uint64_t want = size / 1024;
    EXPECT_TRUE(parsed && kib * 100 >= want * 95 && kib * 100 <= want * 105)
        << "the tmpfs at /rcf-tmpfs asked for " << want << " KiB is "
        << (parsed ? std::to_string(kib) + " KiB" : "of unknown size ('" + kib_text + "')")
        << " (`df -Pk` inside the box); bound it to the size the spec gives";
}

CONFORMANCE_CHECK(confine_no_network, Gate::ready,
                  "A box with network \"none\" has no network interface but lo (/proc/net/dev "
                  "inside the box), when the plugin reports network honoured or bridged.") {
    std::string l = label("nonet");
    ContainerSpec spec = shell_spec(l, kInterfacesProbe);
    spec.network = "none";
    auto capture =
        run_probe(spec, RADIAL_FIELD_NETWORK, "run of a probe of /proc/net/dev with network none");
    if (!capture) return;
    const std::string seen = network_seen(*capture);
    EXPECT_TRUE(seen.empty())
        << "the plugin reports network 'none' honoured, but the box " << seen
        << "; give the box an empty network namespace, or report network REFUSED";
}

// The defaults are relied on without asking: an empty field gets no disposition, so a plugin that
// gives the default box the engine's network, or root, is caught only by running one
// (docs/design.md §5.11). A plugin that cannot do the explicit form either is skipped: it has said
// so.
CONFORMANCE_CHECK(confine_default_network, Gate::ready,
                  "A box given no network (an empty network: the ABI's default, loopback only) "
                  "has no network interface but lo, when the plugin reports network \"none\" "
                  "honoured or bridged.") {
    std::string l = label("defnet");
    ContainerSpec spec = shell_spec(l, kInterfacesProbe);
    ContainerSpec none = spec;
    none.network = "none";
    if (skip_unless_honoured(none, RADIAL_FIELD_NETWORK)) return;
    auto capture = std::make_shared<OutputCapture>();
    if (!expect_ran(run(spec, capture), "run of a probe of /proc/net/dev with no network given"))
        return;
    const std::string seen = network_seen(*capture);
    EXPECT_TRUE(seen.empty())
        << "an empty network is no network (loopback only), but a box "
           "given none "
        << seen
        << "; give a box without a network what network 'none' gets: radiald sends an empty "
           "network for every turn the operator gave none, and asks no disposition for it";
}

CONFORMANCE_CHECK(confine_default_user, Gate::ready,
                  "A box given no user (the ABI's default: never root) runs its workload as a "
                  "uid other than 0, when the plugin reports user honoured or bridged.") {
    std::string l = label("defuser");
    ContainerSpec spec = shell_spec(l, "id -u");
    ContainerSpec given = spec;
    given.user = "4242:4243";
    if (skip_unless_honoured(given, RADIAL_FIELD_USER)) return;
    auto capture = std::make_shared<OutputCapture>();
    if (!expect_ran(run(spec, capture), "run of `id -u` with no user given")) return;
    EXPECT_TRUE(!capture->out.empty() && capture->out != "0\n")
        << "an empty user is the runtime's default, never root, but `id -u` in a box given no "
           "user printed '"
        << printable(capture->out) << "' (stderr '" << printable(capture->err)
        << "'); run a box without a user as an unprivileged uid, as the ABI's default promises "
           "(radial_spec.user)";
}

CONFORMANCE_CHECK(confine_pids_limit, Gate::ready,
                  "A box with pidsLimit 32 cannot have more than 32 processes: starting 48 "
                  "background sleeps fails before the 33rd, when the plugin reports pidsLimit "
                  "honoured or bridged.") {
    const int limit = 32, attempts = 48;
    std::string l = label("pids");
    // A shell that cannot fork exits ("can't fork"), so the last number printed is the count.
    ContainerSpec spec = shell_spec(
        l, "n=0; pids=; while [ $n -lt " + std::to_string(attempts) +
               " ]; do sleep 30 </dev/null >/dev/null 2>&1 & pids=\"$pids $!\"; n=$((n+1)); "
               "echo \"started=$n\"; done; echo all=yes; kill $pids");
    spec.pids_limit = limit;
    auto capture = run_probe(spec, RADIAL_FIELD_PIDS_LIMIT,
                             "run starting background sleeps with pidsLimit 32");
    if (!capture) return;
    int started = std::stoi(value_of(capture->out, "started").value_or("0"));
    EXPECT_TRUE(started > 0 && started <= limit)
        << "the plugin reports pidsLimit honoured, but a box with pidsLimit " << limit
        << " started " << started << " background processes"
        << (value_of(capture->out, "all") ? " (all it tried)" : "") << " besides its shell"
        << (started == 0 ? " (stderr '" + printable(capture->err) + "')" : "")
        << "; bound the number of processes in the box, or report pidsLimit REFUSED";
}

CONFORMANCE_CHECK(confine_memory_oom, Gate::ready,
                  "A box with memory 32 MiB whose workload takes 128 MiB is ended by the memory "
                  "bound, and the run reports OOM_KILLED when the plugin reports memory honoured "
                  "(bridged: ended, the flag optional); ended without it, the box runs once more, "
                  "and the second must carry it.") {
    std::string l = label("memory");
    // The shell itself holds the 128 MiB of the command substitution's output. A second first:
    // an engine watches a box's memory events only once it has started it, so an OOM kill in its
    // first moments may go unreported by the engine itself (docs/design.md §13.1), which is no
    // fault of the plugin's.
    ContainerSpec spec = shell_spec(
        l, "sleep 1; x=$(head -c 134217728 /dev/zero | tr '\\0' x); echo \"survived=${#x}\"");
    spec.memory_bytes = 32u << 20;
    if (skip_unless_honoured(spec, RADIAL_FIELD_MEMORY)) return;
    // BRIDGED says the bound is there by other means (a VM's memory size, whose guest kernel ends
    // the workload): the box must not survive, but the runtime may not know it was the bound.
    std::string bridged_note;
    bool bridged = false;
    for (const auto& d : instance().describe(spec))
        if (d.field == RADIAL_FIELD_MEMORY && d.disposition == RADIAL_DISP_BRIDGED) {
            bridged = true;
            bridged_note = d.note;
        }
    auto capture = std::make_shared<OutputCapture>();
    RunObservation o = run(spec, capture);
    if (!expect_ran(o, "run taking 128 MiB with memory 32 MiB")) return;
    auto survived = value_of(capture->out, "survived");
    bool ended = !survived && !((o.outcome.flags & RADIAL_RUN_EXITED) && o.outcome.exit_code == 0);
    // The engine itself can miss an OOM kill now and then (containerd may handle the box's exit
    // before its memory event: docs/design.md §13.1): a box ended without the flag runs once more,
    // and one of the two must carry it. A plugin that never reports it still fails.
    if (!bridged && ended && !(o.outcome.flags & RADIAL_RUN_OOM_KILLED)) {
        spec.label = label("memory-again");
        capture = std::make_shared<OutputCapture>();
        o = run(spec, capture);
        if (!expect_ran(o, "run taking 128 MiB with memory 32 MiB, again")) return;
        survived = value_of(capture->out, "survived");
        ended = !survived && !((o.outcome.flags & RADIAL_RUN_EXITED) && o.outcome.exit_code == 0);
    }
    if (bridged) {
        EXPECT_TRUE(ended) << "the plugin reports memory bridged (" << bridged_note
                           << "), but a box with memory 32 MiB whose workload takes 128 MiB "
                           << outcome_text(o)
                           << (survived ? " after it held " + *survived + " bytes" : std::string())
                           << "; bound the box's memory, or report memory REFUSED";
        return;
    }
    EXPECT_TRUE(ended && (o.outcome.flags & RADIAL_RUN_OOM_KILLED))
        << "the plugin reports memory honoured, but a box with memory 32 MiB whose workload "
           "takes 128 MiB "
        << outcome_text(o) << (survived ? " after it held " + *survived + " bytes" : std::string())
        << ", without OOM_KILLED; bound the box's memory and report RADIAL_RUN_OOM_KILLED "
           "when the bound ends it (BRIDGED if it cannot tell), or report memory REFUSED";
}

} // namespace radial::conformance
