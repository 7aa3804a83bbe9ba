#include <radial/support/run_registry.h>

#include <radial/plugin/runtime.hpp>

namespace radial::plugin_support {

ActiveRun::ActiveRun() : owner_(std::this_thread::get_id()) {}

void ActiveRun::request_kill() noexcept {
    kill_requested_.store(true);
    wake_.notify();
}

bool ActiveRun::wait_finished(std::chrono::milliseconds budget) const {
    std::unique_lock lock(mutex_);
    return finished_cv_.wait_for(lock, budget, [&] { return finished_; });
}

void ActiveRun::mark_finished() {
    {
        std::lock_guard lock(mutex_);
        finished_ = true;
    }
    finished_cv_.notify_all();
}

RunRegistry::Registration::~Registration() {
    if (run_ == nullptr) return;
    {
        std::lock_guard lock(registry_->mutex_);
        auto it = registry_->runs_.find(label_);
        if (it != registry_->runs_.end() && it->second == run_) registry_->runs_.erase(it);
    }
    run_->mark_finished();
}

RunRegistry::Registration RunRegistry::enter(const std::string& label) {
    auto run = std::make_shared<ActiveRun>();
    std::lock_guard lock(mutex_);
    if (!runs_.emplace(label, run).second)
        throw radial::plugin::Error(RADIAL_E_INVALID, "label",
                                    "starting box '" + label +
                                        "': a run with that label is already in flight; give "
                                        "each concurrent run its own label");
    return Registration(*this, label, std::move(run));
}

std::shared_ptr<ActiveRun> RunRegistry::find(std::string_view label) {
    std::lock_guard lock(mutex_);
    auto it = runs_.find(label);
    return it == runs_.end() ? nullptr : it->second;
}

std::shared_ptr<ActiveRun> RunRegistry::request_kill(std::string_view label) {
    std::lock_guard lock(mutex_);
    auto it = runs_.find(label);
    if (it == runs_.end()) return nullptr;
    it->second->request_kill();
    return it->second;
}

} // namespace radial::plugin_support
