// A plugin whose sinks are called from two of its own threads at once, as the ABI's [any-thread]
// sinks allow: list_by_label adds names, describe_spec reports dispositions and kill reports
// errors, each from two threads racing. The host's collectors must lose nothing and corrupt
// nothing.
#include <radial/runtime_plugin.h>

#include <atomic>
#include <string>
#include <thread>

namespace {

constexpr int kPerThread = 5000;

radial_str str(const std::string& s) { return {s.data(), s.size()}; }

// Runs fn(0) and fn(1) on two threads released at the same moment, and joins both.
template <class F>
void race(F fn) {
    std::atomic<bool> go{false};
    std::thread a([&] {
        while (!go.load()) {
        }
        fn(0);
    });
    std::thread b([&] {
        while (!go.load()) {
        }
        fn(1);
    });
    go = true;
    a.join();
    b.join();
}

int instance_token;

std::int32_t t_create(const radial_host*, const radial_config*, radial_runtime** out,
                      const radial_error_sink*) noexcept {
    *out = reinterpret_cast<radial_runtime*>(&instance_token);
    return RADIAL_OK;
}
void t_destroy(radial_runtime*) noexcept {}
std::int32_t t_run(radial_runtime*, const radial_spec*, const radial_output_sink*,
                   radial_run_result* r, const radial_error_sink*) noexcept {
    r->flags = RADIAL_RUN_EXITED;
    return RADIAL_OK;
}
std::int32_t t_list(radial_runtime*, radial_str, const radial_name_sink* names,
                    const radial_error_sink*) noexcept {
    race([names](int t) {
        for (int i = 0; i < kPerThread; ++i) {
            std::string n = "box-" + std::to_string(t) + "-" + std::to_string(i);
            names->add(names->ctx, str(n));
        }
    });
    return RADIAL_OK;
}
std::int32_t t_describe(radial_runtime*, const radial_spec*, const radial_disposition_sink* out,
                        const radial_error_sink*) noexcept {
    race([out](int t) {
        for (int i = 0; i < kPerThread; ++i) {
            std::string note = "thread " + std::to_string(t);
            out->field(out->ctx, t == 0 ? RADIAL_FIELD_LABEL : RADIAL_FIELD_ARGV,
                       RADIAL_DISP_HONOURED, str(note));
        }
    });
    return RADIAL_OK;
}
std::int32_t t_kill(radial_runtime*, radial_str, const radial_error_sink* err) noexcept {
    race([err](int t) {
        for (int i = 0; i < kPerThread; ++i) {
            std::string m = "e" + std::to_string(t);
            err->report(err->ctx, RADIAL_E_INTERNAL, str("k"), str(m));
        }
    });
    return RADIAL_E_INTERNAL;
}

} // namespace

extern "C" RADIAL_RT_EXPORT const radial_runtime_descriptor* radial_runtime_plugin_entry(void) {
    static const radial_runtime_descriptor d = [] {
        radial_runtime_descriptor x{};
        x.struct_size = sizeof x;
        x.abi_major = RADIAL_RT_ABI_MAJOR;
        x.abi_minor = RADIAL_RT_ABI_MINOR;
        x.id = {"two-threads", 11};
        x.name = {"two threads", 11};
        x.version = {"0.0.1", 5};
        x.create = t_create;
        x.destroy = t_destroy;
        x.run = t_run;
        x.describe_spec = t_describe;
        x.list_by_label = t_list;
        x.kill = t_kill;
        return x;
    }();
    return &d;
}
