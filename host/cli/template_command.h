// host/cli/template_command.h — `radiald template export IMAGE`: makes a locally built image a
// template of the selected runtime when that runtime keeps an image store of its own (the sandbox
// runtime, docs/design.md §13.2): the image is saved from the Docker Engine to a private temporary
// archive, which the runtime loads through its radial.template/1 extension.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

namespace radial::cli {

struct TemplateOptions {
    std::optional<std::string> config_file;
    std::optional<std::string> docker_binary; // --docker; default "docker"
    std::optional<std::string> timeout;       // --timeout; default 30m, for the whole export
    std::string image;
};

// Adds `template` with its `export` subcommand to `app`; returns the `export` subcommand.
CLI::App* add_template_export_command(CLI::App& app, TemplateOptions& o);

// Runs it within one budget (--timeout): a step still running when it ends is stopped; so is one
// under way at SIGINT, SIGTERM, SIGHUP or SIGQUIT (a runtime's load, which cannot be interrupted,
// is left to end within its budget while the command ends). Progress of the save goes to stderr
// (bytes written of the image's size). Exit status: 0 done; 1 the runtime
// keeps no template store, the image is not local, docker or the runtime failed (their message is
// shown) or the budget ran out; 2 a config error or a bad --timeout. The temporary archive is
// removed in every case.
int run_template_export_command(const TemplateOptions& o);

} // namespace radial::cli
