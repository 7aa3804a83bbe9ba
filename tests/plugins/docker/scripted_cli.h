// tests/plugins/docker/scripted_cli.h — a fake docker CLI: a shell script whose answer to each
// subcommand (info, ps, rm, run) is read from files the test writes, and which logs every call.
#pragma once

#include <sys/stat.h>

#include <string>

#include "../../support/temp_dir.h"

namespace radial::test {

class ScriptedCli {
public:
    ScriptedCli() : dir_("radial-fakecli") {
        std::string script = dir_.write("docker", R"SH(#!/bin/sh
d=$(dirname "$0")
printf '%s\n' "$*" >> "$d/calls.log"
[ "$1" = "--host" ] && shift 2
cmd=$1
[ -f "$d/$cmd.sleep" ] && exec sleep "$(cat "$d/$cmd.sleep")"
[ -f "$d/$cmd.out" ] && cat "$d/$cmd.out"
[ -f "$d/$cmd.err" ] && cat "$d/$cmd.err" >&2
[ -f "$d/$cmd.rc" ] && exit "$(cat "$d/$cmd.rc")"
exit 0
)SH");
        ::chmod(script.c_str(), 0755);
    }

    std::string binary() const { return dir_ / "docker"; }
    // What `docker <cmd>` prints and how it exits.
    void answer(const std::string& cmd, const std::string& out, const std::string& err = "",
                int rc = 0) const {
        dir_.write(cmd + ".out", out);
        dir_.write(cmd + ".err", err);
        dir_.write(cmd + ".rc", std::to_string(rc));
    }
    // `docker <cmd>` never answers (sleeps for `seconds`).
    void hang(const std::string& cmd, int seconds) const {
        dir_.write(cmd + ".sleep", std::to_string(seconds));
    }
    // Every call so far, one line each: the arguments joined by spaces.
    std::string calls() const { return read_file(dir_ / "calls.log"); }

private:
    TempDir dir_;
};

} // namespace radial::test
