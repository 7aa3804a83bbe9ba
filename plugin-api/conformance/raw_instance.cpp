#include "raw_instance.h"

#include <atomic>
#include <cstring>
#include <memory>

#include "call_trace.h"
#include "harness.h"
#include "pending_call.h"
#include "plugin_calls.h"

namespace radial::conformance {
namespace {

radial_error_sink error_sink(RawStatus& s) {
    return radial_error_sink{sizeof(radial_error_sink), &s,
                             [](void* ctx, std::int32_t code, radial_str key, radial_str message) {
                                 auto* st = static_cast<RawStatus*>(ctx);
                                 if (st->reported_code == RADIAL_OK) st->reported_code = code;
                                 if (st->key.empty()) st->key = std::string(to_view(key));
                                 if (!st->message.empty()) st->message += "; ";
                                 st->message += std::string(to_view(message));
                             }};
}

void host_log(void*, std::uint32_t level, radial_str message) {
    Harness::get().log(level, to_view(message));
}

// The plugin function a raw sequence (create, a call, destroy) is in, so that a hang names it.
using Phase = std::shared_ptr<std::atomic<const char*>>;

// Runs `fn(phase)` under the budget; a call that does not come back ends the harness, naming
// the function `fn` last said it was in.
template <class T, class F>
T within_budget(F fn) {
    Phase phase = std::make_shared<std::atomic<const char*>>("create");
    auto call = PendingCall<T>::start([fn = std::move(fn), phase]() mutable {
        TracedCall traced("a raw create, call and destroy");
        return fn(phase);
    });
    const Options& options = Harness::get().options;
    if (!call.wait_for(options.budget_ms()))
        Harness::get().hang(std::string(phase->load()) + " did not return within " +
                            std::to_string(options.budget.count()) + " s");
    return call.get();
}

} // namespace

std::vector<unsigned char> host_struct(std::uint32_t size, std::uint16_t abi_minor) {
    static const std::string version = "radial-conformance";
    const std::string& path = Harness::get().library.path;
    radial_host h{};
    h.struct_size = size;
    h.abi_major = RADIAL_RT_ABI_MAJOR;
    h.abi_minor = abi_minor;
    h.ctx = nullptr;
    h.host_version = to_c(version);
    h.plugin_path = to_c(path);
    h.log = &host_log;
    std::vector<unsigned char> bytes(std::max<std::size_t>(size, sizeof h), 0);
    std::memcpy(bytes.data(), &h, std::min<std::size_t>(size, sizeof h));
    return bytes;
}

RawStatus raw_create_destroy(const std::vector<unsigned char>& host_bytes) {
    const radial_runtime_descriptor* d = Harness::get().library.descriptor;
    // The host struct must stay valid until destroy returns: the thread owns its copy.
    return within_budget<RawStatus>([d, host_bytes](const Phase& phase) {
        RawStatus st;
        CConfig config(Harness::get().config);
        radial_error_sink err = error_sink(st);
        radial_runtime* rt = nullptr;
        const auto* host = reinterpret_cast<const radial_host*>(host_bytes.data());
        try {
            st.status = d->create(host, config.get(), &rt, &err);
        } catch (...) {
            st.status = RADIAL_E_INTERNAL;
            st.message = describe_current_exception();
            return st;
        }
        if (st.status == RADIAL_OK && rt != nullptr) {
            phase->store("destroy");
            d->destroy(rt);
        }
        if (st.status == RADIAL_OK && rt == nullptr) {
            st.status = RADIAL_E_INTERNAL;
            st.message = "create returned RADIAL_OK without an instance";
        }
        return st;
    });
}

bool raw_describe(const ContainerSpec& spec, std::vector<host::Disposition>& reported,
                  RawStatus& status) {
    const radial_runtime_descriptor* d = Harness::get().library.descriptor;
    if (!(RADIAL_HAS_FIELD(d, radial_runtime_descriptor, describe_spec) &&
          d->describe_spec != nullptr))
        return false;
    struct Result {
        RawStatus status;
        std::vector<host::Disposition> reported;
    };
    auto host_bytes = host_struct(sizeof(radial_host), RADIAL_RT_ABI_MINOR);
    Result r = within_budget<Result>([d, spec, host_bytes](const Phase& phase) {
        Result out;
        CConfig config(Harness::get().config);
        radial_error_sink err = error_sink(out.status);
        radial_runtime* rt = nullptr;
        const auto* host = reinterpret_cast<const radial_host*>(host_bytes.data());
        out.status.status = d->create(host, config.get(), &rt, &err);
        if (out.status.status != RADIAL_OK || rt == nullptr) return out;
        CSpec c(spec);
        radial_disposition_sink sink{
            sizeof(radial_disposition_sink), &out.reported,
            [](void* ctx, std::uint32_t field, std::uint32_t disp, radial_str note) {
                static_cast<std::vector<host::Disposition>*>(ctx)->push_back(
                    {field, disp, std::string(to_view(note))});
            }};
        phase->store("describe_spec");
        out.status.status = d->describe_spec(rt, c.get(), &sink, &err);
        phase->store("destroy");
        d->destroy(rt);
        return out;
    });
    reported = std::move(r.reported);
    status = std::move(r.status);
    return true;
}

} // namespace radial::conformance
