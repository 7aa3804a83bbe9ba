// plugin-api/conformance/checks_files.cpp — a secret env value is in no file the plugin leaves on
// the host (the ABI header, radial_env_var.secret; docs/design.md §6.3). An OCI runtime must put
// env in a bundle's config.json: that file is the plugin's to remove before run returns.
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <set>

#include "checks.h"

namespace radial::conformance {
namespace {

namespace fs = std::filesystem;

// The scan's bounds: a host's /tmp can be large, and the check must end in seconds.
constexpr std::size_t kMaxEntries = 200'000;      // directory entries visited in all
constexpr int kMaxDepth = 8;                      // below each root
constexpr std::uintmax_t kMaxFileSize = 8u << 20; // larger files are not read

std::string secret_value() {
    static const char* digits = "0123456789abcdef";
    std::random_device rd;
    std::string s = "rcffilesecret";
    for (int i = 0; i < 20; ++i) s.push_back(digits[rd() % 16]);
    return s;
}

// Where a plugin can keep state the harness can know of: the usual scratch places (POSIX shared
// memory, shm_open's /dev/shm, among them), and every absolute path its config names (a
// directory, or the directory a named file is in).
std::vector<fs::path> scan_roots(const host::ConfigSection& config) {
    std::set<fs::path> roots{"/tmp", "/var/tmp", "/run", "/dev/shm"};
    auto add = [&](const std::string& v) {
        if (v.empty() || v.front() != '/') return;
        std::error_code ec;
        fs::path p(v);
        if (fs::is_directory(p, ec))
            roots.insert(p);
        else if (fs::exists(p, ec))
            roots.insert(p.parent_path());
    };
    for (const auto& e : config.entries) {
        add(e.string_value);
        for (const auto& i : e.items) add(i);
    }
    return {roots.begin(), roots.end()};
}

bool file_holds(const fs::path& p, const std::string& needle) {
    int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return false;
    std::string data;
    char buf[65536];
    ssize_t n;
    while (data.size() <= kMaxFileSize && (n = ::read(fd, buf, sizeof buf)) > 0)
        data.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    return data.find(needle) != std::string::npos;
}

// Every regular file under `roots` changed at or after `since` (mtime or ctime) that holds
// `needle`. Does not follow symbolic links; bounded by kMaxEntries and kMaxDepth. A directory that
// cannot be listed, or goes while it is (other programs clean up their temporary directories
// beside the run), ends only its own listing: the scan of everything else goes on.
std::vector<std::string> files_holding(const std::vector<fs::path>& roots,
                                       const std::string& needle, const timespec& since,
                                       bool& truncated) {
    std::vector<std::string> found;
    std::size_t visited = 0;
    truncated = false;
    auto newer = [&](const timespec& t) {
        return t.tv_sec > since.tv_sec || (t.tv_sec == since.tv_sec && t.tv_nsec >= since.tv_nsec);
    };
    std::vector<std::pair<fs::path, int>> dirs; // to list, with their depth below the root
    for (const auto& root : roots) dirs.emplace_back(root, 0);
    while (!dirs.empty()) {
        const auto [dir, depth] = dirs.back();
        dirs.pop_back();
        std::error_code ec;
        fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
        for (; !ec && it != end; it.increment(ec)) {
            if (++visited > kMaxEntries) {
                truncated = true;
                return found;
            }
            struct stat st {};
            if (::lstat(it->path().c_str(), &st) != 0) continue;
            if (S_ISDIR(st.st_mode)) {
                if (depth < kMaxDepth) dirs.emplace_back(it->path(), depth + 1);
                continue;
            }
            if (!S_ISREG(st.st_mode)) continue;
            if (!newer(st.st_mtim) && !newer(st.st_ctim)) continue;
            if (static_cast<std::uintmax_t>(st.st_size) > kMaxFileSize) continue;
            if (file_holds(it->path(), needle)) found.push_back(it->path().string());
        }
    }
    return found;
}

} // namespace

CONFORMANCE_CHECK(secret_env_not_in_files, Gate::ready,
                  "Once run returned, a secret env value is in no file on the host that changed "
                  "during the run, under /tmp, /var/tmp, /run, /dev/shm and the directories the "
                  "plugin's config names; the workload still sees it.") {
    const std::string secret = secret_value();
    std::string l = label("secret-file");
    ContainerSpec spec = shell_spec(l, "[ -n \"$RCF_FILE_SECRET\" ] && echo seen");
    spec.env = {{"RCF_FILE_SECRET", secret, true}};
    if (skip_unless_honoured(spec, RADIAL_FIELD_ENV)) return;
    timespec since{};
    ::clock_gettime(CLOCK_REALTIME, &since);
    since.tv_sec -= 1; // a coarse file-system clock may stamp a file just before `since`
    auto capture = std::make_shared<OutputCapture>();
    if (!expect_ran(run(spec, capture), "run of a box with a secret env value")) return;
    EXPECT_EQ(capture->out, "seen\n") << "the workload did not see its secret env value";
    bool truncated = false;
    auto roots = scan_roots(Harness::get().config);
    auto found = files_holding(roots, secret, since, truncated);
    std::string where;
    for (const auto& r : roots) where += (where.empty() ? "" : ", ") + r.string();
    EXPECT_TRUE(found.empty())
        << "after run returned, the secret env value is in " << found.size()
        << " file(s) on the host that changed during the run: " << join(found, 5)
        << ". A secret is never left in a file on the host (radial/runtime_plugin.h, "
           "radial_env_var.secret): a file that must carry it, such as an OCI bundle's "
           "config.json, is the plugin's to remove before run returns (scanned: "
        << where << (truncated ? "; the scan stopped at its bound" : "") << ")";
}

} // namespace radial::conformance
