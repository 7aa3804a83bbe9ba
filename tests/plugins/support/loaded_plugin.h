// tests/plugins/support/loaded_plugin.h — a real runtime plugin (docker.so, sandbox.so), loaded
// with dlopen and driven through its C descriptor exactly as radiald drives it, plus the
// observations the tests make (output chunks with arrival times, host log lines, error reports).
#pragma once

#include <dlfcn.h>
#include <radial/runtime_plugin.h>
#include <radial/session.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <radial/container_spec.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "config_builder.h"

namespace radial::test {

// The descriptor of the plugin at `path`, loaded once per process (RTLD_NOW | RTLD_LOCAL) and
// never unloaded, as radiald does.
inline const radial_runtime_descriptor& plugin_descriptor(const std::string& path) {
    static std::mutex mutex;
    static std::map<std::string, const radial_runtime_descriptor*> loaded;
    std::lock_guard lock(mutex);
    auto& d = loaded[path];
    if (d == nullptr) {
        void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle == nullptr) throw std::runtime_error(std::string("dlopen: ") + ::dlerror());
        auto entry = reinterpret_cast<radial_runtime_plugin_entry_fn>(
            ::dlsym(handle, RADIAL_RT_ENTRY_SYMBOL));
        if (entry == nullptr) throw std::runtime_error("no " RADIAL_RT_ENTRY_SYMBOL);
        d = entry();
    }
    return *d;
}

// What an error sink received.
struct Reported {
    std::int32_t code = RADIAL_OK;
    std::string key;
    std::string message;
};

inline radial_error_sink error_sink(Reported& r) {
    return radial_error_sink{sizeof(radial_error_sink), &r,
                             [](void* ctx, std::int32_t code, radial_str key, radial_str message) {
                                 auto* rep = static_cast<Reported*>(ctx);
                                 rep->code = code;
                                 rep->key.assign(key.data, key.size);
                                 rep->message.assign(message.data, message.size);
                             }};
}

// One run's observations.
struct RunOutcome {
    std::int32_t status = -1;
    radial_run_result result{};
    Reported error;
    std::string out, err;
    std::chrono::steady_clock::time_point started, first_chunk, returned;
    std::size_t chunks = 0;
    std::size_t max_chunk = 0;
    double seconds() const { return std::chrono::duration<double>(returned - started).count(); }
    double first_chunk_seconds() const {
        return std::chrono::duration<double>(first_chunk - started).count();
    }
};

// Called for every chunk (after it is recorded); its return value goes back to the plugin.
using ChunkHook = std::function<std::int32_t(std::uint32_t stream, std::string_view data)>;

// One instance of a plugin (create ... destroy), with the host's log captured.
class PluginInstance {
public:
    PluginInstance(const std::string& path, ConfigBuilder& config)
        : path_(path), d_(plugin_descriptor(path)) {
        host_.struct_size = sizeof(radial_host);
        host_.abi_major = RADIAL_RT_ABI_MAJOR;
        host_.abi_minor = RADIAL_RT_ABI_MINOR;
        host_.ctx = this;
        host_.host_version = {"radiald test", 12};
        host_.plugin_path = {path_.data(), path_.size()};
        host_.log = [](void* ctx, std::uint32_t, radial_str message) {
            auto* self = static_cast<PluginInstance*>(ctx);
            std::lock_guard lock(self->log_mutex_);
            self->log_.emplace_back(message.data, message.size);
        };
        Reported r;
        radial_error_sink err = error_sink(r);
        if (d_.create(&host_, config.get(), &rt_, &err) != RADIAL_OK)
            throw std::runtime_error("create: " + r.message);
    }
    PluginInstance(const PluginInstance&) = delete;
    PluginInstance& operator=(const PluginInstance&) = delete;
    ~PluginInstance() { d_.destroy(rt_); }

    const radial_runtime_descriptor& d() const { return d_; }
    radial_runtime* rt() const { return rt_; }

    // Runs `spec`; `hook` (optional) sees every chunk and decides the sink's return value.
    // `keep_output` false: chunks are counted and checked by `hook`, not stored.
    RunOutcome run(const ContainerSpec& spec, const ChunkHook& hook = {}, bool keep_output = true) {
        struct Ctx {
            RunOutcome* o;
            const ChunkHook* hook;
            bool keep;
        };
        RunOutcome o;
        Ctx ctx{&o, &hook, keep_output};
        radial_output_sink sink{
            sizeof(radial_output_sink), &ctx,
            [](void* c, std::uint32_t stream, const std::uint8_t* data,
               std::size_t size) -> std::int32_t {
                auto* x = static_cast<Ctx*>(c);
                if (x->o->chunks++ == 0) x->o->first_chunk = std::chrono::steady_clock::now();
                x->o->max_chunk = std::max(x->o->max_chunk, size);
                std::string_view chunk(reinterpret_cast<const char*>(data), size);
                if (x->keep) (stream == RADIAL_STREAM_STDOUT ? x->o->out : x->o->err).append(chunk);
                return *x->hook ? (*x->hook)(stream, chunk) : 0;
            }};
        radial::CSpec cspec(spec);
        radial_error_sink err = error_sink(o.error);
        o.result.struct_size = sizeof(radial_run_result);
        o.started = std::chrono::steady_clock::now();
        o.status = d_.run(rt_, cspec.get(), &sink, &o.result, &err);
        o.returned = std::chrono::steady_clock::now();
        return o;
    }

    Reported kill(std::string_view label) {
        Reported r;
        radial_error_sink err = error_sink(r);
        r.code = d_.kill(rt_, radial::to_c(label), &err);
        return r;
    }

    std::vector<std::string> list(std::string_view prefix, Reported* reported = nullptr) {
        std::vector<std::string> names;
        radial_name_sink sink{sizeof(radial_name_sink), &names, [](void* ctx, radial_str name) {
                                  static_cast<std::vector<std::string>*>(ctx)->emplace_back(
                                      name.data, name.size);
                              }};
        Reported r;
        radial_error_sink err = error_sink(r);
        r.code = d_.list_by_label(rt_, radial::to_c(prefix), &sink, &err);
        if (reported != nullptr) *reported = r;
        return names;
    }

    Reported preflight() {
        Reported r;
        radial_error_sink err = error_sink(r);
        r.code = d_.preflight(rt_, &err);
        return r;
    }

    std::vector<std::string> log() {
        std::lock_guard lock(log_mutex_);
        return log_;
    }

private:
    std::string path_;
    const radial_runtime_descriptor& d_;
    radial_host host_{};
    radial_runtime* rt_ = nullptr;
    std::mutex log_mutex_;
    std::vector<std::string> log_;
};

// One exec of `exec` through a session extension's C table, as radiald makes it: its output
// collected per stream, its status, result and error kept.
inline RunOutcome exec_in_session(const radial_session_ext* ext, radial_runtime* rt,
                                  const ContainerSpec& exec) {
    RunOutcome o;
    radial_output_sink sink{sizeof(radial_output_sink), &o,
                            [](void* ctx, std::uint32_t stream, const std::uint8_t* data,
                               std::size_t size) -> std::int32_t {
                                auto* out = static_cast<RunOutcome*>(ctx);
                                (stream == RADIAL_STREAM_STDOUT ? out->out : out->err)
                                    .append(reinterpret_cast<const char*>(data), size);
                                return 0;
                            }};
    radial::CSpec c(exec);
    radial_error_sink err = error_sink(o.error);
    o.result.struct_size = sizeof(o.result);
    o.started = std::chrono::steady_clock::now();
    o.status = ext->exec(rt, c.get(), &sink, &o.result, &err);
    o.returned = std::chrono::steady_clock::now();
    return o;
}

// Runs a shell command line (test scaffolding: listing, starting and removing its own boxes) and
// returns its stdout.
inline std::string shell(const std::string& command) {
    std::string out;
    if (FILE* p = ::popen(command.c_str(), "r")) {
        char buf[4096];
        std::size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
        ::pclose(p);
    }
    return out;
}

} // namespace radial::test
