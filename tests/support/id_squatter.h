// tests/support/id_squatter.h — a child process of the test that runs as a given uid and gid, as a
// host service that dropped its privileges to an id that happens to be in run.boxIdRange
// (docs/design.md §8.7). Needs root, as the suite does.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <sstream>
#include <string>

#include "host_processes.h"

namespace radial::test {

class IdSquatter {
public:
    // Forks the child and waits up to 10 s until /proc shows it running as `id`; running() says
    // whether it did.
    explicit IdSquatter(uid_t id) : pid_(::fork()) {
        if (pid_ == 0) {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL); // never outlives a test that died
            if (::setresgid(id, id, id) != 0 || ::setresuid(id, id, id) != 0) ::_exit(1);
            for (;;) ::pause();
        }
        running_ = pid_ > 0 && wait_until([&] { return runs_as(id); }, std::chrono::seconds(10));
    }
    ~IdSquatter() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
    IdSquatter(const IdSquatter&) = delete;
    IdSquatter& operator=(const IdSquatter&) = delete;

    pid_t pid() const noexcept { return pid_; }
    bool running() const noexcept { return running_; }

private:
    // Whether /proc shows the child with real uid `id`.
    bool runs_as(uid_t id) const {
        std::istringstream status(read_proc_file("/proc/" + std::to_string(pid_) + "/status"));
        std::string line;
        while (std::getline(status, line))
            if (line.starts_with("Uid:")) {
                std::istringstream ids(line.substr(4));
                uid_t real = 0;
                return ids >> real && real == id;
            }
        return false;
    }

    pid_t pid_;
    bool running_ = false;
};

} // namespace radial::test
