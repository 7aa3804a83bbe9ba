// radial/container_spec.hpp — the ContainerSpec as C++ values, and its conversion to and from the
// C ABI's radial_spec (docs/design.md §5.6 table, plus `cpus` from the Docker backend document).
//
// Header-only; used by radiald, by the plugin helper (radial/plugin/runtime.hpp) and by the
// conformance harness, so that all three read and write the C struct the same way.
#pragma once

#include <radial/runtime_plugin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <radial/names.hpp> // is_env_name, for every spec
#include <string>
#include <string_view>
#include <vector>

namespace radial {

struct Mount {
    std::string source; // absolute host path
    std::string target; // absolute path inside the box
    bool read_only = false;
    // Mounts the host makes below `source` after the box started appear below `target`
    // (radial_spec_propagation; only for a runtime that reports RADIAL_CAP_MOUNT_PROPAGATION).
    bool receives_host_mounts = false;
    friend bool operator==(const Mount&, const Mount&) = default;
};

struct EnvVar {
    std::string name;
    std::string value;
    bool secret = false; // never on any argv, never logged (docs/design.md §6.3)
    friend bool operator==(const EnvVar&, const EnvVar&) = default;
};

struct Tmpfs {
    std::string target;
    std::uint64_t size_bytes = 0; // 0: the runtime's default bound
    friend bool operator==(const Tmpfs&, const Tmpfs&) = default;
};

enum class Tristate : std::uint32_t { unset = RADIAL_UNSET, yes = RADIAL_YES, no = RADIAL_NO };

// What to run and how to contain it. Zero / empty means "not carried": the runtime's default.
struct ContainerSpec {
    std::string label;
    std::string image;
    std::vector<Mount> mounts;
    std::vector<std::string> argv;
    std::vector<EnvVar> env;
    std::string workdir;
    std::uint64_t timeout_ms = 0;
    std::vector<std::uint32_t> host_ports;
    std::int64_t pids_limit = 0;
    Tristate read_only_rootfs = Tristate::unset;
    std::string user;
    std::vector<Tmpfs> tmpfs;
    std::vector<std::string> extra_hosts;
    std::uint64_t memory_bytes = 0;
    std::string network;
    std::uint64_t cpus_milli = 0;
    // Destinations the runtime lets the box reach itself (radial_spec_egress; only for a runtime
    // that reports RADIAL_CAP_EGRESS_POLICY): "host:port" or "*.suffix:port".
    std::vector<std::string> egress;
    // On a timeout or kill, SIGTERM first and this long for the box to end by itself
    // (radial_spec_stop; a runtime that reports RADIAL_CAP_STOP_GRACE honours it). 0: at once.
    std::uint64_t stop_grace_ms = 0;
    friend bool operator==(const ContainerSpec&, const ContainerSpec&) = default;
};

// The camelCase name of each field, for messages and dispositions ("timeoutMs", "readOnlyRootfs";
// docs/design.md §6).
// Unknown ids give "field#<n>".
inline std::string field_name(std::uint32_t field) {
    static constexpr std::string_view names[] = {
        "",        "label",      "image",     "mounts",    "argv",           "env",
        "workdir", "timeoutMs",  "hostPorts", "pidsLimit", "readOnlyRootfs", "user",
        "tmpfs",   "extraHosts", "memory",    "network",   "cpus",           "onOutput"};
    if (field >= 1 && field < std::size(names)) return std::string(names[field]);
    return "field#" + std::to_string(field);
}

// The ids of the fields `spec` carries, in id order. onOutput is always carried: every run streams.
inline std::vector<std::uint32_t> carried_fields(const ContainerSpec& s) {
    std::vector<std::uint32_t> out;
    auto add = [&](bool carried, std::uint32_t id) {
        if (carried) out.push_back(id);
    };
    add(!s.label.empty(), RADIAL_FIELD_LABEL);
    add(!s.image.empty(), RADIAL_FIELD_IMAGE);
    add(!s.mounts.empty(), RADIAL_FIELD_MOUNTS);
    add(!s.argv.empty(), RADIAL_FIELD_ARGV);
    add(!s.env.empty(), RADIAL_FIELD_ENV);
    add(!s.workdir.empty(), RADIAL_FIELD_WORKDIR);
    add(s.timeout_ms != 0, RADIAL_FIELD_TIMEOUT_MS);
    add(!s.host_ports.empty(), RADIAL_FIELD_HOST_PORTS);
    add(s.pids_limit != 0, RADIAL_FIELD_PIDS_LIMIT);
    add(s.read_only_rootfs != Tristate::unset, RADIAL_FIELD_READ_ONLY_ROOTFS);
    add(!s.user.empty(), RADIAL_FIELD_USER);
    add(!s.tmpfs.empty(), RADIAL_FIELD_TMPFS);
    add(!s.extra_hosts.empty(), RADIAL_FIELD_EXTRA_HOSTS);
    add(s.memory_bytes != 0, RADIAL_FIELD_MEMORY);
    add(!s.network.empty(), RADIAL_FIELD_NETWORK);
    add(s.cpus_milli != 0, RADIAL_FIELD_CPUS);
    add(true, RADIAL_FIELD_ON_OUTPUT);
    return out;
}

inline radial_str to_c(std::string_view s) noexcept { return radial_str{s.data(), s.size()}; }

inline std::string_view to_view(radial_str s) noexcept {
    return s.data == nullptr ? std::string_view{} : std::string_view{s.data, s.size};
}

// Reads a radial_array of T by its elem_size, so a newer writer's larger elements are stepped
// over correctly; elements smaller than T are zero-extended.
template <class T, class F>
void for_each_item(const radial_array& a, F&& f) {
    if (a.items == nullptr || a.elem_size == 0) return;
    const auto* base = static_cast<const unsigned char*>(a.items);
    for (std::uint32_t i = 0; i < a.count; ++i) {
        T item{};
        std::memcpy(&item, base + std::size_t(i) * a.elem_size,
                    a.elem_size < sizeof(T) ? a.elem_size : sizeof(T));
        f(item);
    }
}

// Copies a C spec into values. Fields beyond the writer's struct_size read as unset.
inline ContainerSpec from_c(const radial_spec& in) {
    radial_spec c{};
    std::memcpy(&c, &in, in.struct_size < sizeof(c) ? in.struct_size : sizeof(c));
    ContainerSpec s;
    s.label = std::string(to_view(c.label));
    s.image = std::string(to_view(c.image));
    for_each_item<radial_mount>(c.mounts, [&](const radial_mount& m) {
        s.mounts.push_back(
            {std::string(to_view(m.source)), std::string(to_view(m.target)), m.read_only != 0});
    });
    for_each_item<radial_str>(c.argv,
                              [&](const radial_str& a) { s.argv.emplace_back(to_view(a)); });
    for_each_item<radial_env_var>(c.env, [&](const radial_env_var& e) {
        s.env.push_back(
            {std::string(to_view(e.name)), std::string(to_view(e.value)), e.secret != 0});
    });
    s.workdir = std::string(to_view(c.workdir));
    s.timeout_ms = c.timeout_ms;
    for_each_item<std::uint32_t>(c.host_ports, [&](std::uint32_t p) { s.host_ports.push_back(p); });
    s.pids_limit = c.pids_limit;
    s.read_only_rootfs = c.read_only_rootfs == RADIAL_YES  ? Tristate::yes
                         : c.read_only_rootfs == RADIAL_NO ? Tristate::no
                                                           : Tristate::unset;
    s.user = std::string(to_view(c.user));
    for_each_item<radial_tmpfs>(c.tmpfs, [&](const radial_tmpfs& t) {
        s.tmpfs.push_back({std::string(to_view(t.target)), t.size_bytes});
    });
    for_each_item<radial_str>(c.extra_hosts,
                              [&](const radial_str& h) { s.extra_hosts.emplace_back(to_view(h)); });
    s.memory_bytes = c.memory_bytes;
    s.network = std::string(to_view(c.network));
    s.cpus_milli = c.cpus_milli;
    // The chain's additions this version knows; a bounded walk, so a cycle cannot hang it.
    const void* next =
        in.struct_size >= offsetof(radial_spec, next) + sizeof(void*) ? c.next : nullptr;
    for (int hops = 0; next != nullptr && hops < 64; ++hops) {
        radial_spec_ext head{};
        std::memcpy(&head, next, sizeof head);
        if (head.type == RADIAL_SPEC_EXT_EGRESS && head.struct_size >= sizeof(radial_spec_egress)) {
            radial_spec_egress e{};
            std::memcpy(&e, next, sizeof e);
            for_each_item<radial_str>(
                e.destinations, [&](const radial_str& d) { s.egress.emplace_back(to_view(d)); });
        } else if (head.type == RADIAL_SPEC_EXT_STOP &&
                   head.struct_size >= sizeof(radial_spec_stop)) {
            radial_spec_stop st{};
            std::memcpy(&st, next, sizeof st);
            s.stop_grace_ms = st.grace_ms;
        } else if (head.type == RADIAL_SPEC_EXT_PROPAGATION &&
                   head.struct_size >= sizeof(radial_spec_propagation)) {
            radial_spec_propagation p{};
            std::memcpy(&p, next, sizeof p);
            // A target that names no mount is never dropped: it becomes a receiving mount with no
            // source, which every runtime refuses (a box that would not receive what the host
            // meant for it must not start).
            for_each_item<radial_str>(p.targets, [&](const radial_str& t) {
                bool named = false;
                for (auto& m : s.mounts)
                    if (m.target == to_view(t)) named = m.receives_host_mounts = true;
                if (!named) s.mounts.push_back({"", std::string(to_view(t)), false, true});
            });
        }
        next = head.next;
    }
    return s;
}

// A radial_spec that borrows from a ContainerSpec. The ContainerSpec must outlive it and stay
// unchanged. Not copyable: its arrays point into its own vectors.
class CSpec {
public:
    explicit CSpec(const ContainerSpec& s) {
        for (const auto& m : s.mounts)
            mounts_.push_back({to_c(m.source), to_c(m.target), m.read_only ? 1u : 0u, 0});
        for (const auto& a : s.argv) argv_.push_back(to_c(a));
        for (const auto& e : s.env)
            env_.push_back({to_c(e.name), to_c(e.value), e.secret ? 1u : 0u, 0});
        for (const auto& t : s.tmpfs) tmpfs_.push_back({to_c(t.target), t.size_bytes});
        for (const auto& h : s.extra_hosts) hosts_.push_back(to_c(h));
        c_.struct_size = sizeof(radial_spec);
        c_.label = to_c(s.label);
        c_.image = to_c(s.image);
        c_.mounts = array(mounts_);
        c_.argv = array(argv_);
        c_.env = array(env_);
        c_.workdir = to_c(s.workdir);
        c_.timeout_ms = s.timeout_ms;
        c_.host_ports = array(s.host_ports);
        c_.pids_limit = s.pids_limit;
        c_.read_only_rootfs = static_cast<std::uint32_t>(s.read_only_rootfs);
        c_.user = to_c(s.user);
        c_.tmpfs = array(tmpfs_);
        c_.extra_hosts = array(hosts_);
        c_.memory_bytes = s.memory_bytes;
        c_.network = to_c(s.network);
        c_.cpus_milli = s.cpus_milli;
        c_.next = nullptr;
        if (s.stop_grace_ms != 0) {
            stop_ext_.struct_size = sizeof(radial_spec_stop);
            stop_ext_.type = RADIAL_SPEC_EXT_STOP;
            stop_ext_.grace_ms = s.stop_grace_ms;
            c_.next = &stop_ext_;
        }
        if (!s.egress.empty()) {
            for (const auto& d : s.egress) egress_.push_back(to_c(d));
            egress_ext_.struct_size = sizeof(radial_spec_egress);
            egress_ext_.type = RADIAL_SPEC_EXT_EGRESS;
            egress_ext_.next = c_.next;
            egress_ext_.destinations = array(egress_);
            c_.next = &egress_ext_;
        }
        for (const auto& m : s.mounts)
            if (m.receives_host_mounts) receiving_.push_back(to_c(m.target));
        if (!receiving_.empty()) {
            propagation_ext_.struct_size = sizeof(radial_spec_propagation);
            propagation_ext_.type = RADIAL_SPEC_EXT_PROPAGATION;
            propagation_ext_.next = c_.next;
            propagation_ext_.targets = array(receiving_);
            c_.next = &propagation_ext_;
        }
    }
    CSpec(const CSpec&) = delete;
    CSpec& operator=(const CSpec&) = delete;

    const radial_spec* get() const noexcept { return &c_; }

private:
    template <class T>
    static radial_array array(const std::vector<T>& v) noexcept {
        return radial_array{v.empty() ? nullptr : v.data(), static_cast<std::uint32_t>(v.size()),
                            static_cast<std::uint32_t>(sizeof(T))};
    }
    std::vector<radial_mount> mounts_;
    std::vector<radial_str> argv_;
    std::vector<radial_env_var> env_;
    std::vector<radial_tmpfs> tmpfs_;
    std::vector<radial_str> hosts_;
    std::vector<radial_str> egress_;
    radial_spec_egress egress_ext_{};
    radial_spec_stop stop_ext_{};
    std::vector<radial_str> receiving_;
    radial_spec_propagation propagation_ext_{};
    radial_spec c_{};
};

} // namespace radial
