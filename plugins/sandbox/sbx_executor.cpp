#include "sbx_executor.h"

#include <stdlib.h>

namespace radial::sandbox {

namespace {

constexpr const char* kMissingFix = "install the sbx CLI or set run.sandbox.binary";

} // namespace

ChildProcess::Env sbx_client_env() {
    ChildProcess::Env env;
    for (std::string_view name : kSbxPassthroughEnv)
        if (const char* value = ::getenv(std::string(name).c_str())) env[std::string(name)] = value;
    return env;
}

std::filesystem::path ProcessSbxExecutor::executable() const {
    return plugin_support::find_executable(binary_, "sbx CLI", "binary", "run.sandbox.binary");
}

CliOutput ProcessSbxExecutor::invoke(const std::vector<std::string>& args,
                                     std::chrono::milliseconds budget, int cancel_fd) {
    plugin_support::CaptureOptions options;
    options.cancel_fd = cancel_fd;
    options.missing_fix = kMissingFix;
    return plugin_support::capture_cli(executable(), args, sbx_client_env(), budget, options);
}

ChildProcess ProcessSbxExecutor::start(const std::vector<std::string>& args,
                                       internal::UniqueFd stdin_source) {
    ChildProcess::Options options;
    options.stdin_source = std::move(stdin_source);
    options.missing_fix = kMissingFix;
    return ChildProcess::start(executable(), args, sbx_client_env(), std::move(options));
}

} // namespace radial::sandbox
