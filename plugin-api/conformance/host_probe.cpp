#include "host_probe.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace radial::conformance {
namespace {

long status_kib(const char* field) {
    std::ifstream in("/proc/self/status");
    for (std::string line; std::getline(in, line);)
        if (line.rfind(field, 0) == 0)
            return std::strtol(line.c_str() + std::strlen(field), nullptr, 10);
    return -1;
}

// The bytes of a /proc file; POSIX reads, because a process may exit mid-read.
std::string read_small_file(const std::string& path) {
    std::string out;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return out;
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
        out.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    return out;
}

} // namespace

long rss_kib() { return status_kib("VmRSS:"); }
long peak_rss_kib() { return status_kib("VmHWM:"); }

bool reset_peak_rss() {
    // "5" resets VmHWM to the current RSS (Documentation/filesystems/proc.rst, clear_refs).
    int fd = ::open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = ::write(fd, "5", 1) == 1;
    ::close(fd);
    return ok;
}

std::vector<std::string> all_cmdlines() {
    std::vector<std::string> out;
    std::error_code ec;
    // hermetic-ok: a secret must be on no command line anywhere; a vanished process shows nothing
    for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end;
         it.increment(ec)) {
        const std::string name = it->path().filename();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        out.push_back(read_small_file(it->path().string() + "/cmdline"));
    }
    return out;
}

TempDir::TempDir(const std::string& prefix) {
    std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr)
        throw std::runtime_error("creating a temporary directory under /tmp failed: " +
                                 std::string(std::strerror(errno)));
    path_ = tmpl;
    ::chmod(path_.c_str(), 0755);
}

TempDir::~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

std::string TempDir::subdir(const std::string& name, unsigned mode) const {
    std::string p = path_ + "/" + name;
    if (::mkdir(p.c_str(), 0700) != 0 && errno != EEXIST)
        throw std::runtime_error("creating '" + p + "' failed: " + std::strerror(errno));
    ::chmod(p.c_str(), mode);
    return p;
}

void TempDir::write(const std::string& name, const std::string& content, unsigned mode) const {
    std::string p = path_ + "/" + name;
    {
        std::ofstream f(p, std::ios::binary | std::ios::trunc);
        f << content;
        if (!f) throw std::runtime_error("writing '" + p + "' failed");
    }
    ::chmod(p.c_str(), mode);
}

bool TempDir::read(const std::string& name, std::string& content) const {
    std::ifstream in(path_ + "/" + name, std::ios::binary);
    if (!in) return false;
    content.assign(std::istreambuf_iterator<char>(in), {});
    return true;
}

} // namespace radial::conformance
