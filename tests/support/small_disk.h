// tests/support/small_disk.h — a small tmpfs a test mounts itself (the live tests run as root), to
// fill a file system on purpose without touching any other.
#pragma once

#include <sys/mount.h>

#include <filesystem>
#include <string>

namespace radial::test {

// A tmpfs of `size` (e.g. "320k") mounted at `dir` (created if missing) until destruction.
class SmallDisk {
public:
    SmallDisk(const std::string& dir, const std::string& size) : dir_(dir) {
        std::filesystem::create_directories(dir_);
        // 0700: a state directory others can write is refused (config/state_dir_trust.h), and a
        // tmpfs root is 1777 unless told otherwise.
        ok_ = ::mount("tmpfs", dir_.c_str(), "tmpfs", 0, ("size=" + size + ",mode=0700").c_str()) ==
              0;
    }
    SmallDisk(const SmallDisk&) = delete;
    SmallDisk& operator=(const SmallDisk&) = delete;
    ~SmallDisk() {
        if (ok_) ::umount2(dir_.c_str(), MNT_DETACH);
    }
    bool ok() const { return ok_; }
    // Makes room: remounts with a larger `size`.
    bool grow(const std::string& size) {
        return ::mount("tmpfs", dir_.c_str(), "tmpfs", MS_REMOUNT, ("size=" + size).c_str()) == 0;
    }

private:
    std::string dir_;
    bool ok_ = false;
};

} // namespace radial::test
