#include "pool/warm_pool.h"

#include <fmt/format.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <radial/host/session_client.hpp>

#include "log/logger.h"
#include "turn/turn_request.h"

namespace radial::pool {

namespace {

constexpr std::chrono::milliseconds kMaxPause{60'000};
// How often the refill threads look for boxes past their age with nothing else to do.
constexpr std::chrono::milliseconds kAgeCheck{1'000};
// How often the idle boxes are asked after (drop_ended): a box that ended behind the pool's back
// is replaced within this, not at its age.
constexpr std::chrono::milliseconds kLivenessCheck{10'000};

// Whether two box shapes are equal but for the image they run.
bool same_but_image(const ContainerSpec& a, ContainerSpec b) {
    b.image = a.image;
    return a == b;
}

// Whether `cap` is in this thread's effective set (capget).
bool has_effective_capability(unsigned cap) {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3]{};
    if (::syscall(SYS_capget, &header, data) != 0) return false;
    return (data[cap / 32].effective & (1u << (cap % 32))) != 0;
}

} // namespace

std::optional<std::string> pool_refusal(const config::HostConfig& cfg,
                                        const host::RuntimeClient& client) {
    if (cfg.pool.size == 0) return std::nullopt;
    // The receiving directories are mounts of the host's (late_mount.h).
    if (::geteuid() != 0)
        return "run.pool: a pool box's workspace is mounted into it at the claim, which needs "
               "radiald to run as root; unset run.pool.size, or run radiald as root";
    // Root is not enough: the packaged unit bounds radiald's capabilities, and without this one
    // every pool box would fail to be made while the daemon ran on without a pool.
    if (!has_effective_capability(CAP_SYS_ADMIN))
        return "run.pool: a pool box's workspace is mounted into it at the claim, which needs "
               "CAP_SYS_ADMIN, and radiald runs without it (a systemd unit's "
               "CapabilityBoundingSet, or a container's); unset run.pool.size, or run radiald "
               "with CAP_SYS_ADMIN and the mount system calls in the engine's mount namespace "
               "(docs/operations.md, \"The systemd unit\")";
    try {
        host::SessionClient::of(client);
    } catch (const host::RuntimeError& e) {
        return fmt::format("run.pool: {}", e.what());
    }
    if (!client.has_capability(RADIAL_CAP_MOUNT_PROPAGATION))
        return fmt::format(
            "run.pool: runtime '{}' does not report {}, so a box it made before "
            "its turn could not receive the turn's workspace; unset "
            "run.pool.size, or pick a runtime that does (docker with runc)",
            client.info().id, RADIAL_CAP_MOUNT_PROPAGATION);
    if (!client.has_capability(RADIAL_CAP_UNIX_SOCKET_MOUNTS))
        return fmt::format(
            "run.pool: runtime '{}' cannot mount a unix socket's directory, which "
            "a pool box gets its turn's socket through; unset run.pool.size",
            client.info().id);
    return std::nullopt;
}

WarmPool::WarmPool(const config::HostConfig& cfg, const host::RuntimeClient& client,
                   PoolSettings settings)
    : cfg_(cfg), client_(client), settings_(settings) {
    if (auto why = pool_refusal(cfg_, client_))
        throw host::RuntimeError(RADIAL_E_UNSUPPORTED, {}, *why);
    const std::vector<std::string> modes =
        cfg_.pool.modes.empty() ? std::vector<std::string>{cfg_.mode} : cfg_.pool.modes;
    for (const auto& image : cfg_.pool.images)
        for (const auto& mode : modes) {
            Class c;
            c.cls = settle_pool_class(cfg_, client_, image, mode);
            c.stats.image = image;
            c.stats.mode = mode;
            c.stats.target = cfg_.pool.size;
            classes_.push_back(std::move(c));
        }
    reaper_ = std::thread([this] { reap_loop(); });
    for (std::size_t i = 0; i < cfg_.pool.refill_concurrency; ++i)
        threads_.emplace_back([this] { refill_loop(); });
}

ClaimedBox::~ClaimedBox() { pool_.retire(std::move(box_)); }

void WarmPool::retire(std::unique_ptr<PoolBox> box) {
    if (!box) return;
    box->detach_workspace();
    {
        std::lock_guard lock(mutex_);
        retired_.push_back(std::move(box));
    }
    changed_.notify_all();
}

std::uint64_t WarmPool::reaped() const {
    std::lock_guard lock(mutex_);
    return reaped_;
}

bool WarmPool::wait_reaped(std::uint64_t since, std::chrono::milliseconds budget) {
    std::unique_lock lock(mutex_);
    if (reaped_ == since && retired_.empty() && !reaping_) return false;
    // Real time: the engine's removal of a real box (docs/design.md §12.7).
    return changed_.wait_for(lock, budget, [&] { return reaped_ != since; });
}

void WarmPool::remove(std::unique_ptr<PoolBox> box) noexcept {
    if (!box->destroy() && settings_.box_may_remain) settings_.box_may_remain();
}

void WarmPool::reap_loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
        changed_.wait(lock, [&] { return stop_ || !retired_.empty(); });
        if (retired_.empty()) return; // stopped, and nothing left to remove
        auto box = std::move(retired_.front());
        retired_.pop_front();
        const std::string label = box->label();
        reaping_ = true;
        lock.unlock();
        remove(std::move(box));
        lock.lock();
        reaping_ = false;
        ++reaped_;
        out_.erase(label);
        changed_.notify_all(); // wait_reaped()
    }
}

WarmPool::~WarmPool() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    changed_.notify_all();
    for (auto& t : threads_) t.join();
    reaper_.join(); // it removes what was retired before it returns
    std::vector<std::unique_ptr<PoolBox>> idle;
    for (auto& c : classes_)
        for (auto& b : c.idle) idle.push_back(std::move(b));
    idle.clear(); // each destructor removes its box
}

std::unique_ptr<ClaimedBox> WarmPool::claim(const std::string& image, const std::string& mode,
                                            const ContainerSpec& shape) {
    for (;;) {
        std::unique_ptr<PoolBox> box;
        Class* from = nullptr;
        {
            std::lock_guard lock(mutex_);
            const auto fresh_until = oldest_fresh_start();
            Class* named = nullptr;
            for (auto& c : classes_) {
                if (c.cls.image == image && c.cls.mode == mode &&
                    same_but_image(c.cls.shape, shape))
                    named = &c;
                if (!(c.cls.shape == shape)) continue;
                // The youngest (the last made); when even it is past its age, expire() removes
                // them.
                if (!c.idle.empty() && c.idle.back()->started() > fresh_until) {
                    box = std::move(c.idle.back());
                    c.idle.pop_back();
                    --boxes_;
                    from = &c;
                    break;
                }
            }
            // A miss of a pooled image may be an image rebuilt since its class was settled (or
            // one that was not on the engine then): the refill settles it again (resettle()). A
            // turn that differs from the class in more than its image (further mounts, other
            // limits) is one the pool does not serve: no miss.
            if (!box && named) {
                ++named->stats.misses;
                named->resettle = true;
            }
            if (box || named) tell_stats_changed();
        }
        changed_.notify_all();
        if (!box) return nullptr;
        const bool ended = box_has_ended(box->label());
        // The question may have taken long enough to bring the box to its claim margin.
        if (!ended && box->started() > oldest_fresh_start()) {
            std::lock_guard lock(mutex_);
            ++from->stats.hits;
            tell_stats_changed();
            return std::make_unique<ClaimedBox>(std::move(box), *this);
        }
        // An idle box whose PID 1 ended (an engine restarted without live-restore, a box killed
        // behind the host's back) would fail its turn where a box of the turn's own would run it:
        // it is removed, the next idle box is tried, and with none the turn starts its own.
        if (ended)
            log::warn("pool", "pool box '{}' has ended while idle; removing it", box->label());
        else
            log::info("pool", "pool box '{}' reached its age while claimed; removing it",
                      box->label());
        retire(std::move(box));
    }
}

bool WarmPool::box_has_ended(const std::string& label) const {
    try {
        const host::BoxState st = client_.inspect(label);
        return st.supported && (st.state == RADIAL_BOX_GONE || st.state == RADIAL_BOX_ENDED);
    } catch (const std::exception& e) {
        // The engine could not be asked: the claiming turn's exec says why, as a box of its own
        // would.
        log::debug("pool", "pool box '{}': its state could not be read: {}", label, e.what());
        return false;
    }
}

void WarmPool::drop_ended() {
    std::vector<std::string> idle;
    {
        std::lock_guard lock(mutex_);
        const auto now = std::chrono::steady_clock::now();
        if (now < next_liveness_check_) return; // another refill thread asked a moment ago
        next_liveness_check_ = now + kLivenessCheck;
        for (const auto& c : classes_)
            for (const auto& b : c.idle) idle.push_back(b->label());
    }
    std::set<std::string> ended;
    for (const auto& label : idle)
        if (box_has_ended(label)) ended.insert(label);
    if (ended.empty()) return;
    std::vector<std::unique_ptr<PoolBox>> gone;
    {
        std::lock_guard lock(mutex_);
        for (auto& c : classes_)
            for (auto it = c.idle.begin(); it != c.idle.end();) {
                if (ended.count((*it)->label()) == 0) {
                    ++it;
                    continue;
                }
                gone.push_back(std::move(*it)); // still idle: no turn claimed it meanwhile
                it = c.idle.erase(it);
                --boxes_;
            }
        if (!gone.empty()) tell_stats_changed();
    }
    for (auto& b : gone) {
        log::warn("pool", "pool box '{}' has ended while idle; removing it", b->label());
        retire(std::move(b));
    }
    changed_.notify_all();
}

std::set<std::string> WarmPool::labels() const {
    std::lock_guard lock(mutex_);
    return out_;
}

std::vector<PoolStats> WarmPool::stats() const {
    std::lock_guard lock(mutex_);
    std::vector<PoolStats> out;
    for (const auto& c : classes_) {
        PoolStats s = c.stats;
        s.idle = c.idle.size();
        out.push_back(std::move(s));
    }
    return out;
}

std::chrono::steady_clock::time_point WarmPool::oldest_fresh_start() const {
    return std::chrono::steady_clock::now() -
           (std::chrono::milliseconds(settings_.max_age_ms) - settings_.claim_margin);
}

WarmPool::Class* WarmPool::neediest() {
    if (cfg_.pool.memory_budget_bytes > 0 && cfg_.memory_bytes > 0 &&
        (boxes_ + 1) * cfg_.memory_bytes > cfg_.pool.memory_budget_bytes)
        return nullptr;
    Class* best = nullptr;
    std::size_t deficit = 0;
    const auto now = std::chrono::steady_clock::now();
    for (auto& c : classes_) {
        if (now < c.retry_at) continue; // its last create failed: it waits its pause
        const std::size_t have = c.idle.size() + c.making;
        if (have < c.stats.target && c.stats.target - have > deficit) {
            deficit = c.stats.target - have;
            best = &c;
        }
    }
    return best;
}

void WarmPool::expire() {
    std::vector<std::unique_ptr<PoolBox>> old;
    {
        std::lock_guard lock(mutex_);
        const auto fresh_until = oldest_fresh_start();
        for (auto& c : classes_)
            while (!c.idle.empty() && c.idle.front()->started() <= fresh_until) {
                old.push_back(std::move(c.idle.front()));
                c.idle.pop_front();
                --boxes_;
            }
        if (!old.empty()) tell_stats_changed();
    }
    for (auto& b : old) {
        const std::string label = b->label();
        log::info("pool", "pool box '{}' reached its age unclaimed; removing it", label);
        remove(std::move(b));
        std::lock_guard lock(mutex_);
        out_.erase(label);
    }
    if (!old.empty()) changed_.notify_all();
}

void WarmPool::resettle() {
    std::vector<Class*> todo;
    {
        std::lock_guard lock(mutex_);
        for (auto& c : classes_)
            if (c.resettle || c.cls.digest.empty()) {
                c.resettle = false;
                todo.push_back(&c);
            }
    }
    for (Class* c : todo) {
        PoolClass fresh;
        try {
            fresh = settle_pool_class(cfg_, client_, c->stats.image, c->stats.mode);
        } catch (const std::exception& e) {
            log::debug("pool", "settling the class of image {} again: {}", c->stats.image,
                       e.what());
            continue;
        }
        std::vector<std::unique_ptr<PoolBox>> old;
        {
            std::lock_guard lock(mutex_);
            if (fresh.shape == c->cls.shape) continue;
            c->cls = std::move(fresh);
            ++c->generation;
            c->retry_at = {}; // an image that appeared is made at once, past its failures' pause
            c->pause = std::chrono::milliseconds(0);
            for (auto& b : c->idle) old.push_back(std::move(b));
            c->idle.clear();
            boxes_ -= old.size();
            tell_stats_changed();
        }
        log::info("pool", "image {} ({}) is now {}; replacing its {} idle box(es)", c->stats.image,
                  c->stats.mode, c->cls.digest.empty() ? std::string("unresolved") : c->cls.digest,
                  old.size());
        for (auto& b : old) retire(std::move(b));
        changed_.notify_all();
    }
}

void WarmPool::refill_loop() {
    std::unique_lock lock(mutex_);
    while (!stop_) {
        lock.unlock();
        expire();
        drop_ended();
        resettle();
        lock.lock();
        if (stop_) break;
        Class* c = neediest();
        if (c == nullptr) {
            changed_.wait_for(lock, kAgeCheck);
            continue;
        }
        ++c->making;
        ++boxes_;
        std::string id;
        try {
            id = turn::new_turn_id();
        } catch (const std::exception&) {
        }
        const std::string label = pool_label_prefix(cfg_) + id;
        out_.insert(label);
        const PoolClass cls = c->cls;
        const std::uint64_t generation = c->generation;
        lock.unlock();
        std::unique_ptr<PoolBox> box;
        std::string error;
        try {
            box = PoolBox::create(cfg_, client_, cls, settings_.max_age_ms, id);
        } catch (const std::exception& e) {
            error = e.what();
        }
        lock.lock();
        --c->making;
        if (box && generation != c->generation) {
            // Made from what the class was before it was settled again: never handed out.
            --boxes_;
            lock.unlock();
            retire(std::move(box));
            lock.lock();
            continue;
        }
        if (box) {
            c->idle.push_back(std::move(box));
            c->stats.last_error.clear();
            c->pause = std::chrono::milliseconds(0);
            log::debug("pool", "pool box '{}' of image {} is idle", label, c->stats.image);
            tell_stats_changed();
        } else {
            --boxes_;
            out_.erase(label);
            // The runtime may have made the box before the create failed.
            if (settings_.box_may_remain) settings_.box_may_remain();
            if (c->stats.last_error != error)
                log::error("pool", "making a pool box of image {}: {}; retrying", c->stats.image,
                           error);
            c->stats.last_error = error;
            tell_stats_changed();
            // This class waits; the others are made meanwhile.
            c->pause = std::min(kMaxPause, std::max(settings_.retry_pause, c->pause * 2));
            c->retry_at = std::chrono::steady_clock::now() + c->pause;
            changed_.notify_all();
            continue;
        }
        changed_.notify_all();
    }
}

} // namespace radial::pool
