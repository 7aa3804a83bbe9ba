// The check of radial.cap.mount-propagation (radial_spec_propagation; docs/design.md §13.13): a
// mount the host makes on a receiving mount's source after the box started appears in the box,
// and disappears when the host unmounts it. A plugin that does not report the capability skips it;
// so does a harness that may not mount (not root).
#include <sys/mount.h>

#include <cerrno>
#include <cstring>

#include "checks.h"
#include "host_probe.h"

namespace radial::conformance {
namespace {

// A mount the harness made, detached (MNT_DETACH) when it goes.
class HarnessMount {
public:
    HarnessMount() = default;
    HarnessMount(const HarnessMount&) = delete;
    HarnessMount& operator=(const HarnessMount&) = delete;
    ~HarnessMount() { unmount(); }
    // Binds `source` at `target`; errno's text, or empty.
    std::string bind(const std::string& source, const std::string& target) {
        if (::mount(source.c_str(), target.c_str(), nullptr, MS_BIND, nullptr) != 0)
            return std::strerror(errno);
        target_ = target;
        return {};
    }
    void unmount() {
        if (!target_.empty()) ::umount2(target_.c_str(), MNT_DETACH);
        target_.clear();
    }

private:
    std::string target_;
};

} // namespace

CONFORMANCE_CHECK(mount_propagation, Gate::ready,
                  "with radial.cap.mount-propagation, a mount the host makes on a receiving "
                  "mount's source after the box started appears in the box, and is gone from it "
                  "once the host unmounts it.") {
    const auto caps = instance().capabilities();
    if (std::find(caps.begin(), caps.end(), RADIAL_CAP_MOUNT_PROPAGATION) == caps.end())
        GTEST_SKIP() << "the plugin does not report " RADIAL_CAP_MOUNT_PROPAGATION;
    TempDir dir("rcf-late");
    const std::string slot = dir.subdir("slot", 0755);
    dir.subdir("late", 0755);
    dir.write("late/marker", "late mount content\n", 0644);
    // The host's side: the source a mount point of its own, a peer group of its own (private
    // first: a bind of a shared `/` would join its group, and the late mount would reach all its
    // peers), shared.
    HarnessMount shared;
    if (auto problem = shared.bind(slot, slot); !problem.empty())
        GTEST_SKIP() << "the harness may not mount (" << problem
                     << "); run it as root to check mount propagation";
    ASSERT_TRUE(::mount(nullptr, slot.c_str(), nullptr, MS_PRIVATE, nullptr) == 0 &&
                ::mount(nullptr, slot.c_str(), nullptr, MS_SHARED, nullptr) == 0)
        << "making '" << slot << "' shared: " << std::strerror(errno);

    const std::string l = label("late");
    ContainerSpec spec = shell_spec(
        l,
        "echo started; i=0; "
        "while [ ! -e /rcf-late/marker ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; "
        "cat /rcf-late/marker 2>/dev/null || echo never-appeared; "
        "while [ -e /rcf-late/marker ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; "
        "[ -e /rcf-late/marker ] && echo never-left || echo gone");
    spec.mounts = {{slot, "/rcf-late", false, true}};
    if (skip_unless_honoured(spec, RADIAL_FIELD_MOUNTS)) return;
    auto capture = std::make_shared<OutputCapture>();
    auto call = instance().start_run(spec, capture);
    HarnessMount late;
    if (wait_for_output(*capture, call, "started", budget())) {
        ASSERT_EQ(late.bind(dir.path() + "/late", slot), "");
        if (wait_for_output(*capture, call, "late mount content", budget())) late.unmount();
    }
    RunObservation o = finish(call, l, budget());
    if (!expect_ran(o, "run of a box waiting for a mount made after it started")) return;
    EXPECT_EQ(capture->out, "started\nlate mount content\ngone\n")
        << "the box's view of a mount the host made on '" << slot
        << "' after the box started, then unmounted: '" << printable(capture->out)
        << "' (never-appeared: the mount did not reach the box; never-left: the unmount did not). "
           "Make the mount with slave propagation (docker: a bind with 'rslave'), or do not "
           "report " RADIAL_CAP_MOUNT_PROPAGATION;
}

} // namespace radial::conformance
