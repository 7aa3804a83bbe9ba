#include <radial/support/run_ending.h>

namespace radial::plugin_support {

const char* ending_text(Ending e) noexcept {
    switch (e) {
        case Ending::killed: return "kill requested";
        case Ending::timed_out: return "timeout reached";
        case Ending::aborted: return "the output sink asked to stop";
        case Ending::none: break;
    }
    return "running";
}

void set_run_outcome(radial::plugin::RunResult& result, Ending ending, const ExitStatus& status,
                     bool output_aborted, const std::string& box, const std::string& client,
                     const std::string& after) {
    switch (ending) {
        case Ending::killed:
        case Ending::aborted: result.flags = RADIAL_RUN_KILLED; break;
        case Ending::timed_out: result.flags = RADIAL_RUN_TIMED_OUT; break;
        case Ending::none:
            if (!status.exited)
                throw radial::plugin::Error(
                    RADIAL_E_INTERNAL,
                    "running " + box + ": " + client + " " +
                        (status.signal != 0
                             ? "was killed by signal " + std::to_string(status.signal)
                             : std::string("ended with its exit status lost (is SIGCHLD ignored "
                                           "by the host?)")) +
                        " and " + after + "; find what signals processes on this host");
            result.flags |= RADIAL_RUN_EXITED;
            result.exit_code = status.code;
            break;
    }
    if (output_aborted) result.flags |= RADIAL_RUN_OUTPUT_ABORTED;
}

} // namespace radial::plugin_support
