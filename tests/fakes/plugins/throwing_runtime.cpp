// A plugin whose every method throws — a std exception, a radial::plugin::Error or a non-std
// type — to prove the helper turns each into a status and a message at the boundary.
// Config: createFails = "message" makes the constructor throw Error(RADIAL_E_UNAVAILABLE).
#include <radial/plugin/runtime.hpp>
#include <stdexcept>

namespace {
using namespace radial;
using namespace radial::plugin;

struct NotAnException {
    int code = 7;
};

class ThrowingRuntime final : public Runtime {
public:
    static constexpr Info info{"throwing", "Throws everywhere", "1.0.0"};
    ThrowingRuntime(const Host&, Config& config) {
        if (auto msg = config.string("createFails")) throw Error(RADIAL_E_UNAVAILABLE, *msg);
    }
    void preflight() override { throw std::runtime_error("preflight exploded"); }
    // Claims every field, so that radiald's startup check of its config passes and the host
    // reaches the calls that throw (a test double: it runs nothing).
    std::vector<Disposition> describe(const ContainerSpec& spec) override {
        std::vector<Disposition> out;
        for (auto f : carried_fields(spec)) out.push_back({f, RADIAL_DISP_HONOURED, {}});
        return out;
    }
    std::vector<std::string> capabilities() override { throw NotAnException{}; }
    RunResult run(const ContainerSpec&, Output&) override {
        throw std::logic_error("run exploded");
    }
    std::vector<std::string> list_by_label(std::string_view) override {
        throw Error(RADIAL_E_UNAVAILABLE, "engine gone");
    }
    void kill(std::string_view) override { throw NotAnException{}; }
};
} // namespace

RADIAL_EXPORT_RUNTIME(ThrowingRuntime)
