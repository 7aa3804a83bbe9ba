// host/cli/template_command.h — `radiald template export IMAGE`: makes a locally built image a
// template of the sandbox runtime (docs/design.md §13.2), which keeps its own image store: the
// image is saved from the Docker Engine to a private temporary archive and loaded with
// `sbx template load`.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

namespace radial::cli {

struct TemplateOptions {
    std::optional<std::string> config_file;
    std::optional<std::string> docker_binary; // --docker; default "docker"
    std::optional<std::string> sbx_binary;    // --sbx; default [run.sandbox] binary, else "sbx"
    std::string image;
};

// Adds `template` with its `export` subcommand to `app`; returns the `export` subcommand.
CLI::App* add_template_export_command(CLI::App& app, TemplateOptions& o);

// Runs it. Progress of the save goes to stderr (bytes written of the image's size). Exit status:
// 0 done; 1 the image is not local, or docker or sbx failed (their message is shown); 2 a config
// error. The temporary archive is removed in every case.
int run_template_export_command(const TemplateOptions& o);

} // namespace radial::cli
