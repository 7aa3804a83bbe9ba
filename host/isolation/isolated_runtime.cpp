#include "isolation/isolated_runtime.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <radial/box_root.h>
#include <radial/session.h>
#include <radial/template.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <radial/container_spec.hpp>
#include <stdexcept>
#include <thread>
#include <vector>

#include "isolation/plugin_host_process.h"
#include "isolation/plugin_wire.h"

namespace radial::isolation {

using nlohmann::json;

namespace {

// The plugins made isolated in this process, by plugin path: `create` is a plain C function, and
// the radial_host it is given names the plugin it is for.
std::mutex g_registry_mutex;
std::map<std::string, IsolatedPlugin*> g_registry;

void report(const radial_error_sink* err, std::int32_t code, const std::string& message) {
    if (err != nullptr) err->report(err->ctx, code, {"", 0}, {message.data(), message.size()});
}

// The fields of a plugin host's reply, read without throwing: the process runs a third party's
// code, and a reply of the wrong shape (a field missing, of another type, out of range) must fail
// the call, not end radiald through an exception out of a C ABI function. Every reply has an
// integer status (PluginHostProcess::call checks it); the rest is read here.
class ReplyFields {
public:
    // `broken` is told why when a successful reply lacks a field: it abandons the process and
    // returns what else it did, for the report.
    ReplyFields(const json& reply, const char* call,
                std::function<std::string(const std::string&)> broken)
        : reply_(reply), call_(call), broken_(std::move(broken)) {}
    template <class T>
    T number(const char* key) {
        const auto it = reply_.find(key);
        if (it != reply_.end() && it->is_number_integer()) {
            if (it->is_number_unsigned()) {
                const auto v = it->get<std::uint64_t>();
                if (v <= static_cast<std::uint64_t>(std::numeric_limits<T>::max()))
                    return static_cast<T>(v);
            } else {
                const auto v = it->get<std::int64_t>();
                if (v >= static_cast<std::int64_t>(std::numeric_limits<T>::min()) &&
                    (v < 0 || static_cast<std::uint64_t>(v) <=
                                  static_cast<std::uint64_t>(std::numeric_limits<T>::max())))
                    return static_cast<T>(v);
            }
        }
        if (missing_.empty()) missing_ = key;
        return T{};
    }
    std::vector<std::string> strings(const char* key) {
        std::vector<std::string> out;
        const auto it = reply_.find(key);
        if (it != reply_.end() && it->is_array())
            for (const auto& e : *it)
                if (e.is_string()) out.push_back(e.get<std::string>());
        if (it == reply_.end() || !it->is_array() || out.size() != it->size())
            if (missing_.empty()) missing_ = key;
        return out;
    }
    std::int32_t status() const { return reply_["status"].get<std::int32_t>(); }
    // The status, or RADIAL_E_INTERNAL (reported to `err`) when a successful reply lacked a field.
    std::int32_t result(const radial_error_sink* err) const {
        if (status() != RADIAL_OK || missing_.empty()) return status();
        const std::string why = "the runtime plugin's host process answered " + call_ +
                                " without a valid '" + missing_ + "'";
        const std::string done = broken_ ? broken_(why) : std::string();
        report(err, RADIAL_E_INTERNAL, why + "; radiald ended it" + done);
        return RADIAL_E_INTERNAL;
    }

private:
    const json& reply_;
    std::string call_;
    std::function<std::string(const std::string&)> broken_;
    std::string missing_; // the first field that was missing or invalid
};

// The extension tables' functions (defined below, with the descriptor's).
std::int32_t p_root_ids(radial_runtime*, radial_box_root_ids*, const radial_error_sink*);
std::int32_t t_load(radial_runtime*, radial_str, std::uint64_t, const radial_error_sink*);
std::int32_t s_create(radial_runtime*, const radial_spec*, std::uint64_t, std::uint64_t,
                      const radial_error_sink*);
std::int32_t s_exec(radial_runtime*, const radial_spec*, const radial_output_sink*,
                    radial_run_result*, const radial_error_sink*);
std::int32_t s_destroy(radial_runtime*, radial_str, const radial_error_sink*);
std::int32_t s_resolve_image(radial_runtime*, radial_str, const radial_name_sink*,
                             const radial_error_sink*);
std::int32_t s_changes(radial_runtime*, radial_str, std::uint64_t, const radial_change_sink*,
                       const radial_error_sink*);
std::int32_t s_snapshot(radial_runtime*, radial_str, radial_str, const radial_name_sink*,
                        const radial_error_sink*);
std::int32_t s_remove_snapshot(radial_runtime*, radial_str, const radial_error_sink*);
std::int32_t s_check_snapshot_size(radial_runtime*, radial_str, std::uint64_t,
                                   const radial_error_sink*);

// One instance of the plugin, kept in whichever radial-plugin-host process is current.
class Instance {
public:
    Instance(const IsolatedPlugin& plugin, const radial_host& host, json create_request)
        : plugin_(plugin), host_(host), create_request_(std::move(create_request)) {}

    // The current process, or a new one with the instance created again in it when the last one
    // ended. Null (with the reason reported to `err`) when no new one could be made.
    std::shared_ptr<PluginHostProcess> process(const radial_error_sink* err) {
        std::lock_guard lock(mutex_);
        if (current_ && current_->alive()) return current_;
        current_.reset();
        std::shared_ptr<PluginHostProcess> p;
        try {
            p = std::make_shared<PluginHostProcess>(
                plugin_.helper(), plugin_.plugin_fd(), plugin_.plugin_path(), plugin_.id(),
                [this](std::uint32_t level, std::string_view line) {
                    if (host_.log != nullptr)
                        host_.log(host_.ctx, level, {line.data(), line.size()});
                });
        } catch (const std::exception& e) {
            report(err, RADIAL_E_UNAVAILABLE, e.what());
            return nullptr;
        }
        CallSinks sinks;
        sinks.err = err;
        const auto reply = created_ ? on_behalf_of_a_crash(*p, create_request_, sinks,
                                                           "creating the instance again")
                                    : p->call(create_request_, sinks);
        if (!reply) {
            report(err, RADIAL_E_INTERNAL,
                   "the runtime plugin crashed while its instance was made: its host process " +
                       p->ended());
            return nullptr;
        }
        if ((*reply)["status"].get<std::int32_t>() != RADIAL_OK) {
            if (created_)
                report(err, RADIAL_E_INTERNAL,
                       "the runtime plugin's host process was restarted, and creating the "
                       "instance again failed");
            return nullptr;
        }
        if (!created_) {
            // The extension tables, once: get_extension hands out pointers to them.
            ReplyFields fields(*reply, "create", [&p](const std::string& why) {
                p->abandon(why);
                return std::string();
            });
            const auto extensions = fields.strings("extensions");
            const auto calls = fields.strings("session_calls");
            if (fields.result(err) != RADIAL_OK) return nullptr;
            auto has = [](const std::vector<std::string>& v, const char* name) {
                return std::find(v.begin(), v.end(), name) != v.end();
            };
            if (has(extensions, RADIAL_BOX_ROOT_EXTENSION_ID)) {
                box_root_ = radial_box_root_ext{sizeof(radial_box_root_ext), 0, &p_root_ids};
            }
            if (has(extensions, RADIAL_TEMPLATE_EXTENSION_ID))
                template_ = radial_template_ext{sizeof(radial_template_ext), 0, &t_load};
            if (has(calls, "create")) {
                auto& t = session_;
                t.struct_size = sizeof t;
                t.create = &s_create;
                t.exec = has(calls, "exec") ? &s_exec : nullptr;
                t.destroy = has(calls, "destroy") ? &s_destroy : nullptr;
                t.resolve_image = has(calls, "resolve_image") ? &s_resolve_image : nullptr;
                t.changes = has(calls, "changes") ? &s_changes : nullptr;
                t.snapshot = has(calls, "snapshot") ? &s_snapshot : nullptr;
                t.remove_snapshot = has(calls, "remove_snapshot") ? &s_remove_snapshot : nullptr;
                t.check_snapshot_size =
                    has(calls, "check_snapshot_size") ? &s_check_snapshot_size : nullptr;
            }
            created_ = true;
        } else if (host_.log != nullptr) {
            const std::string line = "runtime plugin '" + plugin_.plugin_path() +
                                     "': started a new plugin host process (pid " +
                                     std::to_string(p->pid()) + ") after the last one ended";
            host_.log(host_.ctx, RADIAL_LOG_WARN, {line.data(), line.size()});
        }
        current_ = p;
        return p;
    }

    // Carries out one call. The reply; nullopt when the process ended during it, having reported
    // how to `sinks.err` (and, for a run or exec of `label`, having removed its box).
    std::optional<json> call(const char* what, const json& request, const CallSinks& sinks,
                             const std::string& box_label = {}) {
        auto p = process(sinks.err);
        if (!p) return std::nullopt;
        if (auto reply = p->call(request, sinks)) return reply;
        std::string message = "the runtime plugin crashed during " + std::string(what) +
                              ": its host process (pid " + std::to_string(p->pid()) + ") " +
                              p->ended();
        message += box_label.empty() ? "; radiald starts a new one for the next call"
                                     : box_removal(box_label);
        report(sinks.err, RADIAL_E_INTERNAL, message);
        return std::nullopt;
    }

    // Kills the current process, whose last reply broke the protocol (ReplyFields), and removes
    // the box of the run or exec of `box_label` (if any) through a new one, as after a crash: the
    // run may still be under way in the process that was killed. What became of the box.
    std::string abandon(const std::string& why, const std::string& box_label = {}) {
        std::shared_ptr<PluginHostProcess> p;
        {
            std::lock_guard lock(mutex_);
            p = std::move(current_);
        }
        if (p) p->abandon(why);
        return box_label.empty() ? "; radiald starts a new one for the next call"
                                 : box_removal(box_label);
    }

    // Ends the current process after asking the plugin to destroy its instance.
    void destroy() {
        std::shared_ptr<PluginHostProcess> p;
        {
            std::lock_guard lock(mutex_);
            p = std::move(current_);
        }
        if (p && p->alive()) p->call({{"call", "destroy"}}, CallSinks{});
    }

    // The extension tables the plugin has (filled at the first create, never changed after; a
    // table left zero is one the plugin does not have).
    const radial_box_root_ext* box_root() const {
        return box_root_.struct_size != 0 ? &box_root_ : nullptr;
    }
    const radial_session_ext* session() const {
        return session_.struct_size != 0 ? &session_ : nullptr;
    }
    const radial_template_ext* templates() const {
        return template_.struct_size != 0 ? &template_ : nullptr;
    }

private:
    // `p->call(request)` within the plugin's restart budget (IsolatedPlugin::make): past it the
    // process is killed ("… did not return within N ms"), and the call ends as a crash.
    std::optional<json> on_behalf_of_a_crash(PluginHostProcess& p, const json& request,
                                             const CallSinks& sinks, const char* what) {
        const auto budget = plugin_.restart_budget();
        if (budget.count() <= 0) return p.call(request, sinks);
        std::mutex m;
        std::condition_variable cv;
        bool done = false;
        // Real time: bounds a plugin's call in a process of its own (docs/design.md §12.7).
        std::thread guard([&] {
            std::unique_lock lock(m);
            if (!cv.wait_for(lock, budget, [&] { return done; }))
                p.kill_past_budget(fmt::format("{} after a crash did not return within {} ms", what,
                                               budget.count()));
        });
        auto reply = p.call(request, sinks);
        {
            std::lock_guard lock(m);
            done = true;
        }
        cv.notify_all();
        guard.join();
        return reply;
    }

    // The box of a run the crash ended, removed through a new process; what became of it.
    std::string box_removal(const std::string& label) {
        std::string why;
        radial_error_sink sink{sizeof(radial_error_sink), &why,
                               [](void* ctx, std::int32_t, radial_str, radial_str message) {
                                   auto& why = *static_cast<std::string*>(ctx);
                                   why += (why.empty() ? "" : "; ") + std::string(to_view(message));
                               }};
        auto p = process(&sink);
        if (p) {
            CallSinks sinks;
            sinks.err = &sink;
            const auto reply = on_behalf_of_a_crash(*p, {{"call", "kill"}, {"label", label}}, sinks,
                                                    "removing the box");
            if (reply && (*reply)["status"].get<std::int32_t>() == RADIAL_OK)
                return "; radiald started a new one and removed its box '" + label + "'";
        }
        return "; removing its box '" + label + "' failed (" +
               (why.empty() ? std::string("the plugin crashed again") : why) +
               "): radiald's reconciliation removes it";
    }

    const IsolatedPlugin& plugin_;
    radial_host host_;
    json create_request_;
    std::mutex mutex_;
    std::shared_ptr<PluginHostProcess> current_;
    bool created_ = false; // an instance was made once: a later create is a restart
    radial_session_ext session_{};
    radial_box_root_ext box_root_{};
    radial_template_ext template_{};
};

Instance& self(radial_runtime* rt) { return *reinterpret_cast<Instance*>(rt); }

std::int32_t status_of(const std::optional<json>& reply) {
    return reply ? (*reply)["status"].get<std::int32_t>() : RADIAL_E_INTERNAL;
}

json spec_json(const radial_spec* spec) { return spec_to_json(from_c(*spec)); }

std::int32_t run_like(radial_runtime* rt, const char* call, const radial_spec* spec,
                      const radial_output_sink* out, radial_run_result* result,
                      const radial_error_sink* err) {
    CallSinks sinks;
    sinks.err = err;
    sinks.output = out;
    const ContainerSpec s = from_c(*spec);
    const auto reply =
        self(rt).call(call, {{"call", call}, {"spec", spec_to_json(s)}}, sinks, s.label);
    if (!reply) return RADIAL_E_INTERNAL;
    ReplyFields fields(*reply, call,
                       [rt, &s](const std::string& why) { return self(rt).abandon(why, s.label); });
    result->flags = fields.number<std::uint32_t>("flags");
    result->exit_code = fields.number<std::int32_t>("exit_code");
    result->term_signal = fields.number<std::int32_t>("term_signal");
    result->duration_ms = fields.number<std::uint64_t>("duration_ms");
    if (RADIAL_HAS_FIELD(result, radial_run_result, remove_ms)) {
        result->create_ms = fields.number<std::uint64_t>("create_ms");
        result->remove_ms = fields.number<std::uint64_t>("remove_ms");
    }
    return fields.result(err);
}

std::int32_t simple(radial_runtime* rt, const char* call, json request,
                    const radial_error_sink* err, const radial_name_sink* names = nullptr) {
    CallSinks sinks;
    sinks.err = err;
    sinks.names[0] = names;
    request["call"] = call;
    return status_of(self(rt).call(call, request, sinks));
}

std::string str(radial_str s) { return std::string(to_view(s)); }

// The descriptor's functions.

std::int32_t p_create(const radial_host* host, const radial_config* config, radial_runtime** out,
                      const radial_error_sink* err) {
    const std::string path = str(host->plugin_path);
    IsolatedPlugin* plugin = nullptr;
    {
        std::lock_guard lock(g_registry_mutex);
        if (auto it = g_registry.find(path); it != g_registry.end()) plugin = it->second;
    }
    if (plugin == nullptr) {
        report(err, RADIAL_E_INTERNAL, "no isolated plugin is registered for '" + path + "'");
        return RADIAL_E_INTERNAL;
    }
    host::ConfigSection section;
    section.section = str(config->section);
    for_each_item<radial_config_entry>(config->entries, [&](const radial_config_entry& e) {
        host::ConfigEntry c;
        c.key = str(e.key);
        c.kind = e.kind;
        c.string_value = str(e.string_value);
        c.int_value = e.int_value;
        c.float_value = e.float_value;
        for_each_item<radial_str>(e.items, [&](const radial_str& s) { c.items.push_back(str(s)); });
        section.entries.push_back(std::move(c));
    });
    auto instance = std::make_unique<Instance>(*plugin, *host,
                                               json{{"call", "create"},
                                                    {"config", config_to_json(section)},
                                                    {"host_version", str(host->host_version)},
                                                    {"plugin_path", path}});
    if (!instance->process(err)) return RADIAL_E_INTERNAL;
    *out = reinterpret_cast<radial_runtime*>(instance.release());
    return RADIAL_OK;
}

void p_destroy(radial_runtime* rt) {
    std::unique_ptr<Instance> instance(&self(rt));
    instance->destroy();
}

std::int32_t p_preflight(radial_runtime* rt, const radial_error_sink* err) {
    return simple(rt, "preflight", json::object(), err);
}

std::int32_t p_capabilities(radial_runtime* rt, const radial_name_sink* caps,
                            const radial_error_sink* err) {
    return simple(rt, "capabilities", json::object(), err, caps);
}

std::int32_t p_describe_spec(radial_runtime* rt, const radial_spec* spec,
                             const radial_disposition_sink* out, const radial_error_sink* err) {
    CallSinks sinks;
    sinks.err = err;
    sinks.dispositions = out;
    return status_of(self(rt).call("describe_spec",
                                   {{"call", "describe_spec"}, {"spec", spec_json(spec)}}, sinks));
}

std::int32_t p_run(radial_runtime* rt, const radial_spec* spec, const radial_output_sink* out,
                   radial_run_result* result, const radial_error_sink* err) {
    return run_like(rt, "run", spec, out, result, err);
}

std::int32_t p_list_by_label(radial_runtime* rt, radial_str prefix, const radial_name_sink* names,
                             const radial_error_sink* err) {
    return simple(rt, "list_by_label", {{"label", str(prefix)}}, err, names);
}

std::int32_t p_kill(radial_runtime* rt, radial_str label, const radial_error_sink* err) {
    return simple(rt, "kill", {{"label", str(label)}}, err);
}

std::int32_t p_tcp_route(radial_runtime* rt, const radial_name_sink* bind_host,
                         const radial_name_sink* box_host, const radial_error_sink* err) {
    CallSinks sinks;
    sinks.err = err;
    sinks.names[0] = bind_host;
    sinks.names[1] = box_host;
    return status_of(self(rt).call("tcp_route", {{"call", "tcp_route"}}, sinks));
}

std::int32_t p_inspect(radial_runtime* rt, radial_str label, radial_box_state* state,
                       const radial_error_sink* err) {
    CallSinks sinks;
    sinks.err = err;
    const auto reply =
        self(rt).call("inspect", {{"call", "inspect"}, {"label", str(label)}}, sinks);
    if (!reply) return RADIAL_E_INTERNAL;
    ReplyFields fields(*reply, "inspect",
                       [rt](const std::string& why) { return self(rt).abandon(why); });
    state->state = fields.number<std::uint32_t>("state");
    state->flags = fields.number<std::uint32_t>("flags");
    state->exit_code = fields.number<std::int32_t>("exit_code");
    state->term_signal = fields.number<std::int32_t>("term_signal");
    return fields.result(err);
}

std::int32_t p_root_ids(radial_runtime* rt, radial_box_root_ids* ids,
                        const radial_error_sink* err) {
    CallSinks sinks;
    sinks.err = err;
    const auto reply = self(rt).call("box_root.root_ids", {{"call", "box_root.root_ids"}}, sinks);
    if (!reply) return RADIAL_E_INTERNAL;
    ReplyFields fields(*reply, "box_root.root_ids",
                       [rt](const std::string& why) { return self(rt).abandon(why); });
    ids->host_uid = fields.number<std::uint32_t>("host_uid");
    ids->host_gid = fields.number<std::uint32_t>("host_gid");
    return fields.result(err);
}

std::int32_t t_load(radial_runtime* rt, radial_str archive, std::uint64_t timeout_ms,
                    const radial_error_sink* err) {
    return simple(rt, "template.load", {{"archive", str(archive)}, {"timeout_ms", timeout_ms}},
                  err);
}

std::int32_t s_create(radial_runtime* rt, const radial_spec* spec, std::uint64_t idle_timeout_ms,
                      std::uint64_t max_lifetime_ms, const radial_error_sink* err) {
    return simple(rt, "session.create",
                  {{"spec", spec_json(spec)},
                   {"idle_timeout_ms", idle_timeout_ms},
                   {"max_lifetime_ms", max_lifetime_ms}},
                  err);
}

std::int32_t s_exec(radial_runtime* rt, const radial_spec* exec, const radial_output_sink* out,
                    radial_run_result* result, const radial_error_sink* err) {
    return run_like(rt, "session.exec", exec, out, result, err);
}

std::int32_t s_destroy(radial_runtime* rt, radial_str label, const radial_error_sink* err) {
    return simple(rt, "session.destroy", {{"label", str(label)}}, err);
}

std::int32_t s_resolve_image(radial_runtime* rt, radial_str image, const radial_name_sink* digest,
                             const radial_error_sink* err) {
    return simple(rt, "session.resolve_image", {{"image", str(image)}}, err, digest);
}

std::int32_t s_changes(radial_runtime* rt, radial_str label, std::uint64_t since_ms,
                       const radial_change_sink* changes, const radial_error_sink* err) {
    CallSinks sinks;
    sinks.err = err;
    sinks.changes = changes;
    return status_of(self(rt).call(
        "session.changes",
        {{"call", "session.changes"}, {"label", str(label)}, {"since_ms", since_ms}}, sinks));
}

std::int32_t s_snapshot(radial_runtime* rt, radial_str label, radial_str image,
                        const radial_name_sink* digest, const radial_error_sink* err) {
    return simple(rt, "session.snapshot", {{"label", str(label)}, {"image", str(image)}}, err,
                  digest);
}

std::int32_t s_remove_snapshot(radial_runtime* rt, radial_str image, const radial_error_sink* err) {
    return simple(rt, "session.remove_snapshot", {{"image", str(image)}}, err);
}

std::int32_t s_check_snapshot_size(radial_runtime* rt, radial_str label, std::uint64_t max_bytes,
                                   const radial_error_sink* err) {
    return simple(rt, "session.check_snapshot_size",
                  {{"label", str(label)}, {"max_bytes", max_bytes}}, err);
}

const void* p_get_extension(radial_runtime* rt, const char* id) {
    const Instance& inst = self(rt);
    if (std::string_view(id) == RADIAL_BOX_ROOT_EXTENSION_ID) return inst.box_root();
    if (std::string_view(id) == RADIAL_SESSION_EXTENSION_ID) return inst.session();
    if (std::string_view(id) == RADIAL_TEMPLATE_EXTENSION_ID) return inst.templates();
    return nullptr;
}

// The proxy of an optional function, when the plugin has it.
template <class F>
F present(F real_fn, F proxy_fn) {
    return real_fn != nullptr ? proxy_fn : nullptr;
}

} // namespace

std::shared_ptr<IsolatedPlugin> IsolatedPlugin::make(const radial_runtime_descriptor& real,
                                                     std::string plugin_path, std::string helper,
                                                     std::chrono::milliseconds restart_budget) {
    std::shared_ptr<IsolatedPlugin> p(new IsolatedPlugin());
    p->restart_budget_ = restart_budget;
    p->plugin_fd_.reset(::open(plugin_path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!p->plugin_fd_)
        throw std::runtime_error("opening the runtime plugin '" + plugin_path +
                                 "' for its host process: " + std::strerror(errno));
    p->plugin_path_ = std::move(plugin_path);
    p->helper_ = std::move(helper);
    p->id_ = std::string(to_view(real.id));
    p->name_ = std::string(to_view(real.name));
    p->version_ = std::string(to_view(real.version));
    // The real descriptor may be shorter (an older plugin): its absent functions stay absent.
    radial_runtime_descriptor r{};
    std::memcpy(&r, &real, std::min<std::size_t>(real.struct_size, sizeof r));
    auto& d = p->proxy_;
    d.struct_size = sizeof d;
    d.abi_major = r.abi_major;
    d.abi_minor = r.abi_minor;
    d.id = to_c(p->id_);
    d.name = to_c(p->name_);
    d.version = to_c(p->version_);
    d.create = &p_create;
    d.destroy = &p_destroy;
    d.preflight = present(r.preflight, &p_preflight);
    d.capabilities = present(r.capabilities, &p_capabilities);
    d.describe_spec = present(r.describe_spec, &p_describe_spec);
    d.run = &p_run;
    d.list_by_label = &p_list_by_label;
    d.kill = &p_kill;
    d.get_extension = present(r.get_extension, &p_get_extension);
    d.tcp_route = present(r.tcp_route, &p_tcp_route);
    d.inspect = present(r.inspect, &p_inspect);
    std::lock_guard lock(g_registry_mutex);
    g_registry[p->plugin_path_] = p.get();
    return p;
}

IsolatedPlugin::~IsolatedPlugin() {
    std::lock_guard lock(g_registry_mutex);
    if (auto it = g_registry.find(plugin_path_); it != g_registry.end() && it->second == this)
        g_registry.erase(it);
}

std::string find_plugin_host(const std::string& radiald_dir) {
    const std::string path = radiald_dir + "/../lib/radial/radial-plugin-host";
    return ::access(path.c_str(), X_OK) == 0 ? path : std::string();
}

} // namespace radial::isolation
