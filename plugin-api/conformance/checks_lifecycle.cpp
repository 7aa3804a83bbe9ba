// Checks of an instance's life before any box runs: create with the config and its errors,
// preflight, capabilities, dispositions, and a refused field stopping a run before it starts
// (docs/design.md §5.11).
#include <radial/names.hpp>
#include <thread>

#include "checks.h"
#include "raw_instance.h"

namespace radial::conformance {
namespace {

using namespace std::chrono_literals;

const char* disposition_text(std::uint32_t d) {
    switch (d) {
        case RADIAL_DISP_HONOURED: return "HONOURED";
        case RADIAL_DISP_BRIDGED: return "BRIDGED";
        case RADIAL_DISP_SUPERSEDED: return "SUPERSEDED";
        case RADIAL_DISP_REFUSED: return "REFUSED";
        default: return "an unknown disposition";
    }
}

// A spec carrying every field of ABI 1.0 with plausible values (not run, only described).
ContainerSpec full_spec(const std::string& label) {
    ContainerSpec s;
    s.label = label;
    s.image = Harness::get().options.image.empty() ? "radial-conformance-image"
                                                   : Harness::get().options.image;
    s.mounts = {{"/tmp", "/radial-conformance", true}};
    s.argv = {"sh", "-c", "true"};
    s.env = {{"RADIAL_CONFORMANCE", "1", false}};
    s.workdir = "/";
    s.timeout_ms = 60'000;
    s.host_ports = {8080};
    s.pids_limit = 64;
    s.read_only_rootfs = Tristate::yes;
    s.user = "1000:1000";
    s.tmpfs = {{"/radial-scratch", 16u << 20}};
    s.extra_hosts = {"conformance.invalid:127.0.0.1"};
    s.memory_bytes = 256u << 20;
    s.network = "none";
    s.cpus_milli = 500;
    return s;
}

// Single-field variations that some runtime is likely to refuse, tried in order when the full
// spec has no refused field... and the full spec itself last.
std::vector<ContainerSpec> refusal_candidates(const ContainerSpec& base) {
    std::vector<ContainerSpec> out;
    auto add = [&](auto&& change) {
        ContainerSpec s = base;
        change(s);
        out.push_back(std::move(s));
    };
    add([](ContainerSpec& s) { s.network = "radial-conformance-no-such-network"; });
    add([](ContainerSpec& s) { s.user = "0:0"; });
    add([](ContainerSpec& s) { s.read_only_rootfs = Tristate::no; });
    add([](ContainerSpec& s) { s.extra_hosts = {"conformance.invalid:127.0.0.1"}; });
    add([](ContainerSpec& s) { s.host_ports = {8080}; });
    add([](ContainerSpec& s) { s.pids_limit = 64; });
    add([](ContainerSpec& s) { s.memory_bytes = 256u << 20; });
    add([](ContainerSpec& s) { s.cpus_milli = 500; });
    ContainerSpec full = full_spec(base.label);
    full.argv = base.argv;
    out.push_back(full);
    return out;
}

} // namespace

CONFORMANCE_CHECK(create_with_config, Gate::usable,
                  "create succeeds with the config section and the instance is destroyed "
                  "cleanly, and errors come back as a status and a message.") {
    try {
        Instance inst = Instance::create();
    } catch (...) {
        FAIL() << "create with [" << Harness::get().config.section
               << "] from the config file failed: " << describe_current_exception();
    }
}

CONFORMANCE_CHECK(create_rejects_unknown_key, Gate::usable,
                  "create refuses a config key it does not know with RADIAL_E_INVALID naming the "
                  "key, so an operator's typo is never silently ignored.") {
    const std::string key = "radialConformanceNoSuchKey";
    host::ConfigSection section = Harness::get().config;
    host::ConfigEntry e;
    e.key = key;
    e.kind = RADIAL_CONFIG_STRING;
    e.string_value = "typo";
    section.entries.push_back(e);
    try {
        Instance inst = Instance::create(&section);
        ADD_FAILURE() << "create accepted the unknown key '" << key << "' in [" << section.section
                      << "]; a typo in an operator's config would be silently ignored";
    } catch (const host::RuntimeError& err) {
        EXPECT_EQ(err.code(), RADIAL_E_INVALID)
            << "create refused the unknown key '" << key << "' with status " << err.code() << " ("
            << host::status_name(err.code()) << ") instead of RADIAL_E_INVALID: " << err.what();
        EXPECT_TRUE(err.key() == key || std::string(err.what()).find(key) != std::string::npos)
            << "create refused the unknown key '" << key << "' without naming it (key '"
            << err.key() << "', message '" << err.what() << "')";
    } catch (...) {
        ADD_FAILURE() << "create, given the unknown key '" << key
                      << "': " << describe_current_exception();
    }
}

CONFORMANCE_CHECK(preflight, Gate::created,
                  "preflight returns RADIAL_OK within the budget on this machine; when it fails "
                  "it says what is missing.") {
    try {
        instance().preflight();
    } catch (...) {
        FAIL() << "preflight failed, so no run can be attempted: " << describe_current_exception();
    }
}

CONFORMANCE_CHECK(capabilities_reported, Gate::created,
                  "capabilities returns well-formed, distinct capability ids (dotted names such "
                  "as radial.cap.unix-socket-mounts).") {
    std::vector<std::string> caps;
    try {
        caps = instance().capabilities();
    } catch (...) {
        FAIL() << "capabilities failed: " << describe_current_exception();
    }
    std::string all;
    for (std::size_t i = 0; i < caps.size(); ++i) {
        const auto& c = caps[i];
        all += (all.empty() ? "" : " ") + c;
        EXPECT_TRUE(is_capability_id(c))
            << "the capability id '" << printable(c)
            << "' is not a dotted name such as radial.cap.unix-socket-mounts";
        for (std::size_t j = 0; j < i; ++j)
            EXPECT_NE(caps[j], c) << "the capability id '" << c << "' is reported twice";
    }
    RecordProperty("capabilities", all);
    std::cout << "  capabilities: " << (all.empty() ? "(none)" : all) << "\n";
}

CONFORMANCE_CHECK(dispositions_complete, Gate::created,
                  "describe_spec reports exactly one valid disposition for every field a spec "
                  "carries, with a note for each that is not HONOURED, and none for fields it "
                  "does not carry.") {
    ContainerSpec full = full_spec(label("full"));
    std::vector<host::Disposition> reported;
    RawStatus status;
    if (!raw_describe(full, reported, status)) {
        if (Harness::get().options.allow_no_describe_spec)
            GTEST_SKIP() << "the plugin has no describe_spec (--allow-no-describe-spec): radiald "
                            "refuses every field but label, image, argv and onOutput";
        FAIL() << "the plugin has no describe_spec, so radiald refuses every field a spec carries "
                  "but label, image, argv and onOutput (it fails closed): a turn with a mount, an "
                  "env variable or a timeout cannot run. Implement describe_spec, or pass "
                  "--allow-no-describe-spec if the plugin means to run nothing else";
    }
    ASSERT_EQ(status.status, RADIAL_OK)
        << "describe_spec of a spec carrying every field failed: status " << status.status << ": "
        << status.message;
    for (std::uint32_t f : carried_fields(full)) {
        int n = 0;
        for (const auto& d : reported) {
            if (d.field != f) continue;
            ++n;
            EXPECT_TRUE(d.disposition >= RADIAL_DISP_HONOURED &&
                        d.disposition <= RADIAL_DISP_REFUSED)
                << "the disposition of " << field_name(f) << " is " << d.disposition
                << ", not one of HONOURED, BRIDGED, SUPERSEDED, REFUSED";
            EXPECT_TRUE(d.disposition == RADIAL_DISP_HONOURED || !d.note.empty())
                << field_name(f) << " is " << disposition_text(d.disposition)
                << " without a note saying why";
            std::cout << "  " << field_name(f) << ": " << disposition_text(d.disposition)
                      << (d.note.empty() ? "" : " — " + d.note) << "\n";
        }
        EXPECT_EQ(n, 1) << "describe_spec reported " << n << " dispositions for " << field_name(f)
                        << ", which the spec carries; exactly one is expected";
    }
    ContainerSpec minimal = shell_spec(label("minimal"), "true");
    ASSERT_TRUE(raw_describe(minimal, reported, status));
    auto carried = carried_fields(minimal);
    for (const auto& d : reported)
        EXPECT_NE(std::find(carried.begin(), carried.end(), d.field), carried.end())
            << "describe_spec reported a disposition for " << field_name(d.field)
            << ", which the spec does not carry";
}

CONFORMANCE_CHECK(refused_field_fails_before_start, Gate::ready,
                  "A spec carrying a field the plugin reports REFUSED makes run fail with "
                  "RADIAL_E_REFUSED naming the field, before any box starts or any output "
                  "arrives.") {
    const std::string l = label("refused");
    ContainerSpec base = shell_spec(l, "echo started; sleep 30");
    std::optional<ContainerSpec> refused_spec;
    std::string refused_field;
    for (const auto& candidate : refusal_candidates(base)) {
        std::vector<host::Disposition> reported;
        RawStatus status;
        if (!raw_describe(candidate, reported, status)) break;
        for (const auto& d : reported)
            if (d.disposition == RADIAL_DISP_REFUSED) {
                refused_spec = candidate;
                refused_field = field_name(d.field);
                break;
            }
        if (refused_spec) break;
    }
    if (!refused_spec)
        GTEST_SKIP() << "the plugin refuses none of the fields the harness tried (network, user "
                        "0:0, readOnlyRootfs no, extraHosts, hostPorts, pidsLimit, memory, cpus)";
    auto capture = std::make_shared<OutputCapture>();
    auto call = instance().start_run(*refused_spec, capture);
    // A box must never appear: watch while the run is in flight.
    bool listed = false;
    while (!call.wait_for(100ms) && !listed) {
        for (const auto& n : instance().list(l)) listed = listed || n == l;
    }
    RunObservation o = finish(call, l, budget());
    for (const auto& n : instance().list(l)) listed = listed || n == l;
    EXPECT_FALSE(listed) << "list_by_label showed the box '" << l << "' of a run whose "
                         << refused_field << " the plugin reports REFUSED";
    ASSERT_FALSE(o.ok) << "run of a spec whose " << refused_field << " the plugin reports REFUSED "
                       << outcome_text(o) << " instead of failing with RADIAL_E_REFUSED";
    EXPECT_EQ(o.code, RADIAL_E_REFUSED)
        << "run of a spec whose " << refused_field << " the plugin reports REFUSED failed with "
        << "status " << o.code << " (" << host::status_name(o.code)
        << ") instead of RADIAL_E_REFUSED: " << o.message;
    EXPECT_TRUE(o.key == refused_field || o.message.find(refused_field) != std::string::npos)
        << "run refused the spec without naming the field '" << refused_field << "' (key '" << o.key
        << "', message '" << o.message << "')";
    EXPECT_EQ(capture->chunks, 0u)
        << "the refused run delivered output ('" << printable(capture->out) << "'): a box ran";
}

} // namespace radial::conformance
