// plugin-api/conformance/checks_limits.cpp — the rest of the confinement probes (docs/design.md
// §5.11, "Confinement probes"): cpus and extraHosts, read from inside the box, when the plugin
// reports them honoured or bridged. hostPorts and a named network are not probed: reaching a
// published port or a peer on a named network needs a network the harness can count on, and a
// test host may have none (radial's CI runs dockerd --bridge=none); those checks say so and skip
// rather than pass on nothing.
#include <radial/internal/names.h>

#include <sstream>

#include "checks.h"

namespace radial::conformance {
namespace {

// The value of the last line "key=value" in `text`, or nullopt.
std::optional<std::string> value_after(const std::string& text, const std::string& key) {
    std::optional<std::string> v;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (line.rfind(key + "=", 0) == 0) v = line.substr(key.size() + 1);
    return v;
}

// Why the check skips: the plugin reports `field` HONOURED or BRIDGED, and that claim cannot be
// probed here (`why`). nullopt when the plugin makes no such claim (the check passes: nothing is
// claimed, nothing to probe).
std::optional<std::string> unprobeable(const std::vector<host::Disposition>& dispositions,
                                       std::uint32_t field, const std::string& why) {
    for (const auto& d : dispositions)
        if (d.field == field &&
            (d.disposition == RADIAL_DISP_HONOURED || d.disposition == RADIAL_DISP_BRIDGED))
            return "the plugin reports " + field_name(field) +
                   " honoured, and the harness cannot probe it: " + why;
    return std::nullopt;
}

} // namespace

CONFORMANCE_CHECK(confine_cpus, Gate::ready,
                  "A box with cpus 0.5 has a CPU quota of half a CPU in its cgroup (cpu.max, or "
                  "cfs_quota_us / cfs_period_us, inside the box), when the plugin reports cpus "
                  "honoured or bridged.") {
    std::string l = label("cpus");
    ContainerSpec spec = shell_spec(
        l,
        "if [ -r /sys/fs/cgroup/cpu.max ]; then echo \"max=$(cat /sys/fs/cgroup/cpu.max)\"; "
        "elif [ -r /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then "
        "echo \"max=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) "
        "$(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)\"; else echo max=none; fi");
    spec.cpus_milli = 500;
    auto capture = run_probe(spec, RADIAL_FIELD_CPUS, "run of a probe of the cpu quota");
    if (!capture) return;
    // Bridged: a bound coarser than the ask (e.g. rounded up to whole CPUs) passes, no bound does
    // not. Honoured: the ask itself.
    bool bridged = false;
    for (const auto& d : instance().describe(spec))
        bridged = bridged || (d.field == RADIAL_FIELD_CPUS && d.disposition == RADIAL_DISP_BRIDGED);
    std::string max = value_after(capture->out, "max").value_or("");
    // No cpu controller in the box at all: the kernel the box sees is not the host's (gVisor's
    // user-space kernel keeps the engine's quota on the sandbox, outside the box), so the quota
    // cannot be read from inside. A skip, named in the verdict: never a pass.
    if (max == "none")
        GTEST_SKIP() << "the box shows no cpu cgroup (neither cpu.max nor cpu.cfs_quota_us): its "
                        "kernel is not the host's (e.g. gVisor), so a CPU quota cannot be seen "
                        "from inside; nothing was probed";
    std::istringstream fields(max);
    std::string quota, period;
    fields >> quota >> period;
    long long q = 0, p = 0;
    bool parsed = internal::is_decimal(quota, 18) && internal::is_decimal(period, 18) &&
                  (q = std::stoll(quota), p = std::stoll(period), p > 0);
    // The quota may be rounded to the kernel's granularity: 1% either way; bridged, up to the
    // next whole CPU.
    const long long upper = bridged ? 1000 * p * 101 : 500 * p * 101;
    EXPECT_TRUE(parsed && q * 1000 * 100 >= 500 * p * 99 && q * 1000 * 100 <= upper)
        << "the plugin reports cpus " << (bridged ? "bridged" : "honoured")
        << ", but in a box with cpus 0.5 the cgroup's cpu quota is '"
        << printable(max.empty() ? capture->out : max) << "' (stderr '" << printable(capture->err)
        << "'); expected a quota of half the period (e.g. '50000 100000')"
        << (bridged ? ", or at most one whole CPU" : "")
        << ". Bound the box's CPU, or report cpus REFUSED";
}

CONFORMANCE_CHECK(confine_extra_hosts, Gate::ready,
                  "A box given extraHosts rcf-extra.invalid:192.0.2.7 resolves that name from "
                  "its /etc/hosts, when the plugin reports extraHosts honoured or bridged.") {
    std::string l = label("hosts");
    ContainerSpec spec = shell_spec(l, "grep -w 'rcf-extra\\.invalid' /etc/hosts || true");
    spec.extra_hosts = {"rcf-extra.invalid:192.0.2.7"};
    auto capture =
        run_probe(spec, RADIAL_FIELD_EXTRA_HOSTS, "run of a probe of /etc/hosts with extraHosts");
    if (!capture) return;
    std::istringstream in(capture->out);
    bool found = false;
    for (std::string line; std::getline(in, line);) {
        std::istringstream words(line);
        std::string addr, name;
        words >> addr;
        while (words >> name) found = found || (addr == "192.0.2.7" && name == "rcf-extra.invalid");
    }
    EXPECT_TRUE(found) << "the plugin reports extraHosts honoured, but /etc/hosts in a box given "
                          "rcf-extra.invalid:192.0.2.7 has "
                       << (capture->out.empty() ? std::string("no line for that name")
                                                : "'" + printable(capture->out) + "'")
                       << "; add each entry to the box's /etc/hosts, or report extraHosts "
                          "REFUSED";
}

CONFORMANCE_CHECK(confine_host_ports, Gate::ready,
                  "hostPorts is not probed: the check skips, saying so, when the plugin reports "
                  "it honoured or bridged.") {
    ContainerSpec spec = shell_spec(label("ports"), "true");
    spec.host_ports = {18080};
    if (auto why = unprobeable(instance().describe(spec), RADIAL_FIELD_HOST_PORTS,
                               "reaching a published port needs a network the box can be reached "
                               "over, which a test host may not have (dockerd --bridge=none)"))
        GTEST_SKIP() << *why;
}

CONFORMANCE_CHECK(confine_named_network, Gate::ready,
                  "A named network is not probed: the check skips, saying so, when the plugin "
                  "reports it honoured or bridged.") {
    ContainerSpec spec = shell_spec(label("net"), "true");
    spec.network = "rcf-network";
    if (auto why = unprobeable(instance().describe(spec), RADIAL_FIELD_NETWORK,
                               "a peer on a named network needs that network on the engine, which "
                               "a test host may not have (dockerd --bridge=none)"))
        GTEST_SKIP() << *why;
}

} // namespace radial::conformance
