// radial/host/template_client.hpp — the host's side of the template extension
// ("radial.template/1", radial/template.h): loading an image archive into a runtime that keeps an
// image store of its own.
//
// Errors as RuntimeClient's (RuntimeError with the plugin's status and message). Thread-safe.
#pragma once

#include <radial/template.h>

#include <chrono>
#include <optional>
#include <radial/host/runtime_client.hpp>
#include <string>

namespace radial::host {

class TemplateClient {
public:
    // The template store of `client`'s runtime, or nullopt when the runtime does not offer the
    // extension (it runs the engine's images directly, or it predates the extension).
    static std::optional<TemplateClient> of(const RuntimeClient& client) {
        const auto* ext = static_cast<const radial_template_ext*>(
            client.extension_table(RADIAL_TEMPLATE_EXTENSION_ID));
        if (ext == nullptr || !RADIAL_HAS_FIELD(ext, radial_template_ext, load) ||
            ext->load == nullptr)
            return std::nullopt;
        return TemplateClient(client.state_, ext);
    }

    // Loads the archive at `archive` (absolute) within `budget` (see radial_template_ext.load).
    // The plugin keeps the budget; this call waits for it, and for the client's call deadline
    // beyond it when one is set (RuntimeClient::set_call_deadline: past that the instance is
    // stuck). Throws RuntimeError (RADIAL_E_TIMEOUT past the budget).
    void load(const std::string& archive, std::chrono::milliseconds budget) const {
        const auto grace = state_->deadline;
        RuntimeClient::bounded_on(
            state_, "template load", grace.count() > 0 ? budget + grace : grace,
            [ext = ext_, archive, budget](RuntimeClient::State& st) {
                detail::ErrorCollector err;
                auto sink = err.sink();
                const std::int32_t status = ext->load(
                    st.rt, to_c(archive), static_cast<std::uint64_t>(budget.count()), sink);
                if (status != RADIAL_OK) err.raise(status, "template load");
            });
    }

private:
    TemplateClient(std::shared_ptr<RuntimeClient::State> state, const radial_template_ext* ext)
        : state_(std::move(state)), ext_(ext) {}
    std::shared_ptr<RuntimeClient::State> state_;
    const radial_template_ext* ext_;
};

} // namespace radial::host
