// tests/plugins/docker/scripted_cli.h — a fake docker CLI: a shell script whose answer to each
// subcommand (info, ps, rm, run, inspect) is read from files the test writes (stdout, stderr, then
// an optional sleep, then the exit code), and which logs every call. `info` asked for the
// engine's runtimes answers as the subcommand "info-runtimes". `run` also writes the
// --cidfile when told to, and records its environment and --env-file.
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
[ "$cmd" = info ] && case "$*" in *.Runtimes*) cmd=info-runtimes ;; esac
if [ "$cmd" = run ]; then
  env > "$d/run.environ"
  prev=
  for a in "$@"; do
    [ "$prev" = --cidfile ] && [ -f "$d/run.cid" ] && cat "$d/run.cid" > "$a"
    [ "$prev" = --env-file ] && cat "$a" > "$d/run.envfile"
    prev=$a
  done
fi
[ -f "$d/$cmd.out" ] && cat "$d/$cmd.out"
[ -f "$d/$cmd.err" ] && cat "$d/$cmd.err" >&2
[ -f "$d/$cmd.sleep" ] && exec sleep "$(cat "$d/$cmd.sleep")"
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
    // `docker run` creates container `id` (64 hex digits): writes it to the --cidfile, as docker
    // does right after creating a container and before starting it.
    void creates(const std::string& id) const { dir_.write("run.cid", id); }
    // Every call so far, one line each: the arguments joined by spaces.
    std::string calls() const { return read_file(dir_ / "calls.log"); }
    // The environment the last `docker run` saw (`env` output), and what it read from its
    // --env-file ("" when it had none).
    std::string run_environ() const { return read_file(dir_ / "run.environ"); }
    std::string run_env_file() const { return read_file(dir_ / "run.envfile"); }

private:
    TempDir dir_;
};

} // namespace radial::test
