#include "cli/template_command.h"

#include <fmt/format.h>
#include <radial/internal/temp_dir.h>
#include <unistd.h>

#include <boost/process.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "cli/config_file.h"
#include "cli/exit_status.h"
#include "cli/runtime_setup.h"
#include "config/host_config.h"
#include "log/logger.h"

namespace radial::cli {
namespace {

namespace bp = boost::process;
namespace fs = std::filesystem;

// Exporting the template failed (docker, sbx, the archive): one line naming the step; the caller
// prefixes the image.
class ExportError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A private directory under $TMPDIR for the archive, removed with everything in it when the command
// ends. Throws ExportError naming the path.
internal::TempDir archive_dir() {
    try {
        return internal::TempDir(internal::TempDir::default_root(), "radial-template-");
    } catch (const internal::TempDirError& e) {
        throw ExportError(e.what());
    }
}

// `exe` looked up in PATH when it has no '/'. Throws ExportError naming the flag to use.
std::string find_program(const std::string& exe, const char* flag) {
    if (exe.find('/') != std::string::npos) return exe;
    auto found = bp::search_path(exe);
    if (found.empty())
        throw ExportError(
            fmt::format("'{}' is not in PATH; install it or give its path with {}", exe, flag));
    return found.string();
}

// Runs argv to its end, stdout and stderr captured together. Returns the exit code and output.
std::pair<int, std::string> capture(const std::vector<std::string>& argv) {
    bp::ipstream out;
    // The redirections read as template brackets to clang-format.
    // clang-format off
    bp::child c(argv.front(), std::vector<std::string>(argv.begin() + 1, argv.end()),
                bp::std_in < bp::null, (bp::std_out & bp::std_err) > out);
    // clang-format on
    std::string text, line;
    while (std::getline(out, line)) text += line + "\n";
    c.wait();
    return {c.exit_code(), text};
}

// A CLI's output as one line for a message: its non-empty lines joined, "[]" (an empty listing)
// left out.
std::string one_line(const std::string& text) {
    std::string out, line;
    std::istringstream in(text);
    while (std::getline(in, line))
        if (!line.empty() && line != "[]") out += (out.empty() ? "" : "; ") + line;
    return out;
}

std::string mib(std::uintmax_t bytes) { return fmt::format("{:.1f} MiB", bytes / 1048576.0); }

// `docker image save`, showing how much of the image is written: a line that rewrites itself on a
// terminal, a line at each quarter otherwise (logs).
void save_image(const std::string& docker, const std::string& image, std::uintmax_t size,
                const fs::path& archive) {
    bp::ipstream err;
    // clang-format off
    bp::child c(docker, std::vector<std::string>{"image", "save", "-o", archive.string(), image},
                bp::std_in < bp::null, bp::std_out > bp::null, bp::std_err > err);
    // clang-format on
    const bool tty = ::isatty(STDERR_FILENO) != 0;
    int quarters = 0;
    std::error_code ec;
    while (c.running(ec)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
        const auto written = fs::file_size(archive, ec);
        if (ec || size == 0) continue;
        if (tty) {
            fmt::print(stderr, "\rsaving '{}': {} of about {}", image, mib(written), mib(size));
        } else if (quarters < 3 &&
                   written * 4 >= size * static_cast<std::uintmax_t>(quarters + 1)) {
            fmt::print(stderr, "saving '{}': {} of about {}\n", image, mib(written), mib(size));
            quarters = static_cast<int>(std::min<std::uintmax_t>(3, written * 4 / size));
        }
    }
    c.wait();
    std::string message, line;
    while (std::getline(err, line)) message += (message.empty() ? "" : " ") + line;
    if (tty) fmt::print(stderr, "\n");
    if (c.exit_code() != 0)
        throw ExportError(
            fmt::format("saving image '{}' with '{} image save' failed (exit "
                        "{}): {}",
                        image, docker, c.exit_code(), message));
    fmt::print(stderr, "saved '{}': {}\n", image, mib(fs::file_size(archive, ec)));
}

} // namespace

CLI::App* add_template_export_command(CLI::App& app, TemplateOptions& o) {
    auto* tmpl = app.add_subcommand("template", "Sandbox runtime templates");
    tmpl->require_subcommand(1);
    auto* cmd = tmpl->add_subcommand(
        "export",
        "Make a local Docker image a sandbox template (docker image save, then sbx "
        "template load)");
    cmd->add_option("--config", o.config_file, "Config file (TOML): run.sandbox.binary is used")
        ->check(CLI::ExistingFile);
    cmd->add_option("--docker", o.docker_binary, "The docker CLI (default: docker in PATH)");
    cmd->add_option("--sbx", o.sbx_binary,
                    "The sbx CLI (default: run.sandbox.binary when the sandbox runtime is "
                    "selected, else sbx in PATH)");
    cmd->add_option("IMAGE", o.image, "The image, as the local Docker Engine names it")->required();
    return cmd;
}

int run_template_export_command(const TemplateOptions& o) {
    std::string sbx = o.sbx_binary.value_or("sbx");
    try {
        auto cfg = load_config(o.config_file);
        if (!o.sbx_binary && cfg.container_runtime == "sandbox")
            for (const auto& e : cfg.runtime_section.entries)
                if (e.key == "binary") sbx = e.string_value;
    } catch (const config::ConfigError& e) {
        return report_error(e, CommandKind::other, "template");
    }
    try {
        const std::string docker = find_program(o.docker_binary.value_or("docker"), "--docker");
        sbx = find_program(sbx, "--sbx or run.sandbox.binary");
        auto [rc, size_text] =
            capture({docker, "image", "inspect", "--format", "{{.Size}}", o.image});
        if (rc != 0)
            throw ExportError(fmt::format(
                "image '{}' is not in the local Docker Engine ({}); build it (or pull it) first",
                o.image, one_line(size_text)));
        const std::uintmax_t size = std::strtoull(size_text.c_str(), nullptr, 10);
        const internal::TempDir dir = archive_dir();
        const fs::path archive = dir.path() / "template.tar";
        save_image(docker, o.image, size, archive);
        auto [load_rc, load_out] = capture({sbx, "template", "load", archive.string()});
        if (load_rc != 0)
            throw ExportError(fmt::format("'{} template load' failed (exit {}): {}", sbx, load_rc,
                                          one_line(load_out)));
        fmt::print(
            "template '{}' loaded into the sandbox runtime; runs name it as their image, or "
            "set run.sandbox.template = \"{}\"\n",
            o.image, o.image);
        return kExitOk;
    } catch (const std::exception& e) {
        log::error("template", "exporting '{}': {}", o.image, e.what());
        return exit_status_for(e, CommandKind::other);
    }
}

} // namespace radial::cli
