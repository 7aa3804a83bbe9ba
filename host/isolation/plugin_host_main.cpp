// radial-plugin-host: loads one runtime plugin (.so, unchanged) in a process of its own and serves
// radiald's calls into it (docs/design.md §5.13, run.pluginIsolation = "process"). A plugin that
// crashes then ends this process, not radiald: radiald sees the call's socket close, reads how the
// process ended, starts a new one and records what happened.
//
// Usage: radial-plugin-host PLUGIN_PATH RUNTIME_ID, with the control socket on fd 3 and the plugin
// file, open, on fd 4 (radiald starts it so).
// Calls arrive on sockets passed over the control socket (host/isolation/plugin_wire.h), each
// socket served on a thread of its own, so a `kill` reaches a plugin whose `run` is blocked. The
// process ends when the control socket closes (radiald is gone or done).
#include <dlfcn.h>
#include <fcntl.h>
#include <radial/box_root.h>
#include <radial/session.h>
#include <radial/template.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <radial/host/runtime_answers.hpp>
#include <radial/host/runtime_descriptor.hpp>
#include <radial/host/sink_gate.hpp>
#include <string>
#include <thread>

#include "isolation/plugin_wire.h"
#include "redaction/no_core_dumps.h"

namespace {

using namespace radial;
using namespace radial::isolation;
using nlohmann::json;

constexpr int kControlFd = 3;
constexpr int kPluginFd = 4; // the plugin file radiald opened
// The most bytes of output or change data one frame carries (its 4-byte head below the limit).
constexpr std::size_t kMostSinkBytes = kMaxFramePayload - 4;

struct PluginHost {
    // The plugin's descriptor, copied up to its struct_size into one of this host's size: a field
    // past the plugin's struct_size reads as absent (NULL) wherever it is read, as in radiald
    // (isolated_runtime.cpp), never as the bytes that follow the plugin's shorter struct.
    radial_runtime_descriptor copy{};
    const radial_runtime_descriptor* d = nullptr;
    std::string load_error;
    radial_runtime* rt = nullptr;
    const radial_session_ext* session = nullptr;
    const radial_box_root_ext* box_root = nullptr;
    const radial_template_ext* templates = nullptr;
    std::string host_version, plugin_path;
    radial_host host{};
    std::mutex control_mutex; // log lines from any plugin thread
};

PluginHost g;

void log_thunk(void*, std::uint32_t level, radial_str message) noexcept {
    std::string line(1, static_cast<char>(level > 3 ? 3 : level));
    // Each text is cut here as radiald would cut it (docs/design.md §5.2): a longer one would
    // break the frame limit and cost the plugin host its life.
    host::append_plugin_text(line, to_view(message));
    std::lock_guard lock(g.control_mutex);
    write_frame(kControlFd, kLog, line);
}

// One call's socket and the sinks that write to it. Sinks may be called from any plugin thread;
// one mutex keeps each frame (and an output frame with its acknowledgement) whole. Each sink goes
// through a gate (radial/host/sink_gate.hpp) closed before the reply: a plugin thread that calls
// one after its call returned (an ABI breach) is dropped, so it can neither put frames into the
// socket's next call, another turn's, nor reach this context once it is gone.
class CallContext {
public:
    explicit CallContext(int fd) : fd_(fd) {}

    const radial_error_sink* error_sink() {
        return gate_.place(radial_error_sink{
            0, nullptr, [](void* c, std::int32_t code, radial_str key, radial_str message) {
                host::SinkGate::pass(c, [&](void* call) {
                    json j = {{"code", code},
                              {"key", host::plugin_text(to_view(key))},
                              {"message", host::plugin_text(to_view(message))}};
                    static_cast<CallContext*>(call)->send(kError, to_cbor(j));
                });
            }});
    }
    // Two name sinks per call at most (tcp_route's bind and box hosts): `which` tells them apart.
    const radial_name_sink* name_sink(int which) {
        return name_gates_[which == 0 ? 0 : 1].place(
            radial_name_sink{0, nullptr, [](void* c, radial_str name) {
                                 host::SinkGate::pass(c, [&](void* tag) {
                                     auto* n = static_cast<NameTag*>(tag);
                                     std::string p(1, static_cast<char>(n->which));
                                     host::append_plugin_text(p, to_view(name));
                                     n->call->send(kName, p);
                                 });
                             }});
    }
    const radial_disposition_sink* disposition_sink() {
        return gate_.place(radial_disposition_sink{
            0, nullptr,
            [](void* c, std::uint32_t field, std::uint32_t disposition, radial_str note) {
                host::SinkGate::pass(c, [&](void* call) {
                    json j = {{"field", field},
                              {"disposition", disposition},
                              {"note", host::plugin_text(to_view(note))}};
                    static_cast<CallContext*>(call)->send(kDisposition, to_cbor(j));
                });
            }});
    }
    const radial_output_sink* output_sink() {
        return gate_.place(radial_output_sink{
            0, nullptr,
            [](void* c, std::uint32_t stream, const std::uint8_t* data,
               std::size_t size) -> std::int32_t {
                std::int32_t rc = 1; // dropped: "stop"
                host::SinkGate::pass(c, [&](void* call) {
                    // The whole stream id (a raw C plugin may give any), then the bytes in frames
                    // the wire takes: one write of any size reaches radiald as it would
                    // in-process, never dropped with a "stop" radiald did not say.
                    const char* at = reinterpret_cast<const char*>(data);
                    do {
                        const std::size_t n = std::min<std::size_t>(size, kMostSinkBytes);
                        std::string p = wire_u32(stream);
                        p.append(at, n);
                        rc = static_cast<CallContext*>(call)->ask(kOutput, p);
                        if (rc != 0) return;
                        at += n;
                        size -= n;
                    } while (size > 0);
                });
                return rc;
            }});
    }
    const radial_change_sink* change_sink() {
        return gate_.place(radial_change_sink{
            0, nullptr,
            [](void* c, radial_str path, std::uint32_t kind) -> std::int32_t {
                std::int32_t rc = 1;
                host::SinkGate::pass(c, [&](void* call) {
                    std::string p = wire_u32(kind);
                    p.append(to_view(path));
                    rc = static_cast<CallContext*>(call)->ask(kChangeEntry, p);
                });
                return rc;
            },
            [](void* c, const std::uint8_t* data, std::size_t size) -> std::int32_t {
                std::int32_t rc = 1;
                host::SinkGate::pass(c, [&](void* call) {
                    const char* at = reinterpret_cast<const char*>(data);
                    do {
                        const std::size_t n = std::min<std::size_t>(size, kMostSinkBytes);
                        rc = static_cast<CallContext*>(call)->ask(kChangeData,
                                                                  std::string_view(at, n));
                        if (rc != 0) return;
                        at += n;
                        size -= n;
                    } while (size > 0);
                });
                return rc;
            }});
    }

    // A frame the wire cannot carry (a name, an error or a disposition over kMaxFramePayload)
    // ends this process, loudly: dropped, a name would be a box reconciliation never sees.
    void send(char type, std::string_view payload) {
        std::lock_guard lock(mutex_);
        if (payload.size() > kMaxFramePayload) {
            std::fprintf(stderr,
                         "radial plugin host: the plugin gave %zu bytes in one sink call, more "
                         "than the %u the wire carries; ending\n",
                         payload.size(), kMaxFramePayload);
            std::abort();
        }
        write_frame(fd_, type, payload);
    }
    // Sends a frame whose sink answers, and returns the answer (non-zero: stop). radiald gone:
    // stop.
    std::int32_t ask(char type, std::string_view payload) {
        std::lock_guard lock(mutex_);
        Frame ack;
        if (!write_frame(fd_, type, payload) || !read_frame(fd_, ack) || ack.type != kAck ||
            ack.payload.size() != 1)
            return 1;
        return ack.payload[0] == 0 ? 0 : 1;
    }

    // Closes the sinks (after a sink call in flight returned), then sends the call's reply.
    void reply(std::string_view payload) {
        gate_.close();
        for (auto& g : name_gates_) g.close();
        std::lock_guard lock(mutex_);
        write_frame(fd_, kReturn, payload);
    }

private:
    struct NameTag {
        CallContext* call;
        int which;
    };
    int fd_;
    std::mutex mutex_;
    NameTag names_[2] = {{this, 0}, {this, 1}};
    // Last: closed before what their sinks reach goes.
    host::SinkGate gate_{this};
    host::SinkGate name_gates_[2] = {host::SinkGate(&names_[0]), host::SinkGate(&names_[1])};
};

json run_result_json(std::int32_t status, const radial_run_result& r) {
    return {{"status", status},
            {"flags", r.flags},
            {"exit_code", r.exit_code},
            {"term_signal", r.term_signal},
            {"duration_ms", r.duration_ms},
            {"create_ms", r.create_ms},
            {"remove_ms", r.remove_ms}};
}

// Carries out one request; returns the reply (always with "status").
json dispatch(const json& req, CallContext& call) {
    const std::string name = req.at("call").get<std::string>();
    const radial_error_sink* err = call.error_sink();
    auto fail = [&](std::int32_t code, const std::string& message) {
        err->report(err->ctx, code, to_c(""), to_c(message));
        return json{{"status", code}};
    };
    if (!g.load_error.empty()) return fail(RADIAL_E_INTERNAL, g.load_error);
    const radial_runtime_descriptor* d = g.d;
    if (name == "create") {
        if (g.rt != nullptr) return fail(RADIAL_E_INTERNAL, "the plugin host has an instance");
        const host::ConfigSection section = config_from_json(req.at("config"));
        g.host_version = req.at("host_version").get<std::string>();
        g.plugin_path = req.at("plugin_path").get<std::string>();
        g.host = {sizeof(radial_host),  RADIAL_RT_ABI_MAJOR, RADIAL_RT_ABI_MINOR, nullptr,
                  to_c(g.host_version), to_c(g.plugin_path), &log_thunk};
        const host::CConfig cc(section);
        const std::int32_t status = d->create(&g.host, cc.get(), &g.rt, err);
        json extensions = json::array();
        if (status == RADIAL_OK && g.rt != nullptr &&
            RADIAL_HAS_FIELD(d, radial_runtime_descriptor, get_extension) &&
            d->get_extension != nullptr) {
            g.session = static_cast<const radial_session_ext*>(
                d->get_extension(g.rt, RADIAL_SESSION_EXTENSION_ID));
            // A table too short for its first calls is refused, as SessionClient::of refuses it
            // in-process.
            if (g.session != nullptr && !RADIAL_HAS_FIELD(g.session, radial_session_ext, destroy))
                g.session = nullptr;
            g.box_root = static_cast<const radial_box_root_ext*>(
                d->get_extension(g.rt, RADIAL_BOX_ROOT_EXTENSION_ID));
            // A table too short for its call is none, as BoxRootClient::ask reads it in-process.
            if (g.box_root != nullptr &&
                !(RADIAL_HAS_FIELD(g.box_root, radial_box_root_ext, root_ids) &&
                  g.box_root->root_ids != nullptr))
                g.box_root = nullptr;
            if (g.box_root != nullptr) extensions.push_back(RADIAL_BOX_ROOT_EXTENSION_ID);
            const auto* templates = static_cast<const radial_template_ext*>(
                d->get_extension(g.rt, RADIAL_TEMPLATE_EXTENSION_ID));
            // Kept only when its call is there, so that a "template.load" request can rely on it.
            if (templates != nullptr && RADIAL_HAS_FIELD(templates, radial_template_ext, load) &&
                templates->load != nullptr) {
                g.templates = templates;
                extensions.push_back(RADIAL_TEMPLATE_EXTENSION_ID);
            }
        }
        json session_calls = json::array();
        if (const auto* s = g.session) {
            auto has = [&](auto member, const char* what) {
                if (s->*member != nullptr) session_calls.push_back(what);
            };
            has(&radial_session_ext::create, "create");
            has(&radial_session_ext::exec, "exec");
            has(&radial_session_ext::destroy, "destroy");
            if (RADIAL_HAS_FIELD(s, radial_session_ext, resolve_image)) {
                has(&radial_session_ext::resolve_image, "resolve_image");
                has(&radial_session_ext::changes, "changes");
                has(&radial_session_ext::snapshot, "snapshot");
                has(&radial_session_ext::remove_snapshot, "remove_snapshot");
            }
            if (RADIAL_HAS_FIELD(s, radial_session_ext, check_snapshot_size))
                has(&radial_session_ext::check_snapshot_size, "check_snapshot_size");
        }
        return {{"status", status}, {"extensions", extensions}, {"session_calls", session_calls}};
    }
    if (g.rt == nullptr) return fail(RADIAL_E_INTERNAL, "the plugin host has no instance");
    radial_runtime* rt = g.rt;
    if (name == "destroy") {
        d->destroy(rt);
        g.rt = nullptr;
        return {{"status", RADIAL_OK}};
    }
    if (name == "preflight") return {{"status", d->preflight(rt, err)}};
    if (name == "capabilities") {
        auto names = call.name_sink(0);
        return {{"status", d->capabilities(rt, names, err)}};
    }
    if (name == "describe_spec") {
        const ContainerSpec spec = spec_from_json(req.at("spec"));
        const CSpec c(spec);
        auto sink = call.disposition_sink();
        return {{"status", d->describe_spec(rt, c.get(), sink, err)}};
    }
    if (name == "run" || name == "session.exec") {
        const ContainerSpec spec = spec_from_json(req.at("spec"));
        const CSpec c(spec);
        auto out = call.output_sink();
        radial_run_result r{};
        r.struct_size = sizeof r;
        // radiald asks what the first create's answer offered; a restarted plugin may offer less.
        if (name != "run" && (g.session == nullptr || g.session->exec == nullptr))
            return fail(RADIAL_E_UNSUPPORTED, "the plugin has no session exec");
        const std::int32_t status = name == "run" ? d->run(rt, c.get(), out, &r, err)
                                                  : g.session->exec(rt, c.get(), out, &r, err);
        return run_result_json(status, r);
    }
    const std::string label = req.value("label", std::string());
    if (name == "list_by_label") {
        auto names = call.name_sink(0);
        return {{"status", d->list_by_label(rt, to_c(label), names, err)}};
    }
    if (name == "kill") return {{"status", d->kill(rt, to_c(label), err)}};
    if (name == "tcp_route") {
        auto bind = call.name_sink(0), box = call.name_sink(1);
        return {{"status", d->tcp_route(rt, bind, box, err)}};
    }
    if (name == "inspect") {
        radial_box_state st{};
        st.struct_size = sizeof st;
        const std::int32_t status = d->inspect(rt, to_c(label), &st, err);
        return {{"status", status},
                {"state", st.state},
                {"flags", st.flags},
                {"exit_code", st.exit_code},
                {"term_signal", st.term_signal}};
    }
    if (name == "box_root.root_ids") {
        if (g.box_root == nullptr) // kept by create only with its call (above)
            return fail(RADIAL_E_UNSUPPORTED, "the plugin has no box root extension");
        radial_box_root_ids ids{};
        ids.struct_size = sizeof ids;
        const std::int32_t status = g.box_root->root_ids(rt, &ids, err);
        return {{"status", status}, {"host_uid", ids.host_uid}, {"host_gid", ids.host_gid}};
    }
    if (name == "template.load") {
        if (g.templates == nullptr)
            return fail(RADIAL_E_UNSUPPORTED, "the plugin has no template extension");
        const std::string archive = req.at("archive").get<std::string>();
        return {{"status", g.templates->load(rt, to_c(archive),
                                             req.at("timeout_ms").get<std::uint64_t>(), err)}};
    }
    const radial_session_ext* s = g.session;
    if (s == nullptr) return fail(RADIAL_E_UNSUPPORTED, "the plugin has no session extension");
    const std::string image = req.value("image", std::string());
    // Each call looked for before it is made: the table may be shorter, or hold fewer calls,
    // than the one radiald learned at the first create.
    const bool snapshots = RADIAL_HAS_FIELD(s, radial_session_ext, remove_snapshot);
    const bool offered =
        name == "session.create"            ? s->create != nullptr
        : name == "session.destroy"         ? s->destroy != nullptr
        : name == "session.resolve_image"   ? snapshots && s->resolve_image
        : name == "session.changes"         ? snapshots && s->changes
        : name == "session.snapshot"        ? snapshots && s->snapshot
        : name == "session.remove_snapshot" ? snapshots && s->remove_snapshot
        : name == "session.check_snapshot_size"
            ? RADIAL_HAS_FIELD(s, radial_session_ext, check_snapshot_size) && s->check_snapshot_size
            : true;
    if (!offered) return fail(RADIAL_E_UNSUPPORTED, "the plugin does not offer " + name);
    if (name == "session.create") {
        const ContainerSpec spec = spec_from_json(req.at("spec"));
        const CSpec c(spec);
        return {{"status", s->create(rt, c.get(), req.at("idle_timeout_ms").get<std::uint64_t>(),
                                     req.at("max_lifetime_ms").get<std::uint64_t>(), err)}};
    }
    if (name == "session.destroy") return {{"status", s->destroy(rt, to_c(label), err)}};
    if (name == "session.resolve_image") {
        auto names = call.name_sink(0);
        return {{"status", s->resolve_image(rt, to_c(image), names, err)}};
    }
    if (name == "session.changes") {
        auto changes = call.change_sink();
        return {{"status", s->changes(rt, to_c(label), req.at("since_ms").get<std::uint64_t>(),
                                      changes, err)}};
    }
    if (name == "session.snapshot") {
        auto names = call.name_sink(0);
        return {{"status", s->snapshot(rt, to_c(label), to_c(image), names, err)}};
    }
    if (name == "session.remove_snapshot")
        return {{"status", s->remove_snapshot(rt, to_c(image), err)}};
    if (name == "session.check_snapshot_size")
        return {{"status", s->check_snapshot_size(rt, to_c(label),
                                                  req.at("max_bytes").get<std::uint64_t>(), err)}};
    return fail(RADIAL_E_UNSUPPORTED, "unknown call '" + name + "'");
}

// Serves the calls that come on one socket, one after the other, until radiald closes it: radiald
// keeps a socket whose call returned for its next call, so a call costs no new socket or thread.
void serve(internal::UniqueFd fd) {
    Frame request;
    while (read_frame(fd.get(), request) && request.type == kRequest) {
        CallContext call(fd.get());
        json reply;
        try {
            reply = dispatch(from_cbor(request.payload), call);
        } catch (const std::exception& e) {
            const radial_error_sink* err = call.error_sink();
            err->report(err->ctx, RADIAL_E_INTERNAL, to_c(""),
                        to_c(std::string("radial-plugin-host: a malformed call: ") + e.what()));
            reply = {{"status", RADIAL_E_INTERNAL}};
        }
        call.reply(to_cbor(reply));
    }
}

// Loads the file radiald opened and checked (fd 4), not whatever is at its path now; `path` is
// for messages, `id` the id radiald read from it.
std::string load(const char* path, const char* id) {
    const std::string self_fd = "/proc/self/fd/" + std::to_string(kPluginFd);
    void* lib = ::dlopen(self_fd.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return std::string("cannot load the plugin '") + path + "': " + ::dlerror();
    void* entry = ::dlsym(lib, RADIAL_RT_ENTRY_SYMBOL);
    if (entry == nullptr) return "the plugin has no entry symbol " RADIAL_RT_ENTRY_SYMBOL;
    const auto* real = reinterpret_cast<radial_runtime_plugin_entry_fn>(entry)();
    const std::string problem = host::descriptor_problem(real);
    if (!problem.empty()) return "the plugin's descriptor: " + problem;
    std::memcpy(&g.copy, real, std::min<std::size_t>(real->struct_size, sizeof g.copy));
    g.d = &g.copy;
    if (to_view(g.d->id) != id)
        return "the plugin '" + std::string(path) + "' reports id '" +
               std::string(to_view(g.d->id)) + "', not the '" + id + "' radiald read from it";
    return {};
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 3 || ::fcntl(kControlFd, F_GETFD) < 0 || ::fcntl(kPluginFd, F_GETFD) < 0) {
        static const char usage[] =
            "radial-plugin-host: radiald starts this to load a runtime plugin in a process of "
            "its own (run.pluginIsolation = \"process\"); it is not run by hand\n";
        (void)!::write(2, usage, sizeof usage - 1);
        return 2;
    }
    // Nothing of radiald's but the control socket and the plugin file, whatever it left open by
    // mistake; and neither for a child the plugin starts (a child holding the control socket
    // would keep radiald from seeing this process end).
    ::syscall(SYS_close_range, kPluginFd + 1, ~0U, 0);
    ::fcntl(kControlFd, F_SETFD, FD_CLOEXEC);
    ::fcntl(kPluginFd, F_SETFD, FD_CLOEXEC);
    ::signal(SIGPIPE, SIG_IGN); // a gone radiald is a failed write, as in radiald itself
    // The plugin's calls carry the turns' secrets, as radiald's do: no core file of them.
    if (!radial::redaction::forbid_core_dumps()) {
        static const char refused[] = "radial-plugin-host: cannot turn off core dumps\n";
        (void)!::write(2, refused, sizeof refused - 1);
        return 2;
    }
    g.load_error = load(argv[1], argv[2]);
    for (;;) {
        internal::UniqueFd call = receive_fd(kControlFd);
        if (!call) break; // radiald closed the control socket, or is gone
        std::thread(serve, std::move(call)).detach();
    }
    // Calls still in flight belong to a radiald that is gone: their boxes are reconciled by the
    // next one (docs/design.md §8.4). No destructor runs beside the plugin's threads.
    ::_exit(0);
}
