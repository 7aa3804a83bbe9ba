// Checks of the library and its descriptor: loading, the frozen header, the function table, the
// identity, and ABI negotiation with older and newer hosts (docs/design.md §5.11).
#include <radial/names.hpp>

#include "checks.h"
#include "raw_instance.h"

namespace radial::conformance {
namespace {

bool valid_utf8(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        auto c = static_cast<unsigned char>(s[i]);
        std::size_t n = c < 0x80           ? 1
                        : (c >> 5) == 0x6  ? 2
                        : (c >> 4) == 0xe  ? 3
                        : (c >> 3) == 0x1e ? 4
                                           : 0;
        if (n == 0 || i + n > s.size()) return false;
        for (std::size_t k = 1; k < n; ++k)
            if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
        i += n;
    }
    return true;
}

const radial_runtime_descriptor& descriptor() { return *Harness::get().library.descriptor; }

} // namespace

CONFORMANCE_CHECK(plugin_loads, Gate::none,
                  "The plugin loads with dlopen(RTLD_NOW | RTLD_LOCAL), exports "
                  "radial_runtime_plugin_entry, and the entry returns the same descriptor every "
                  "time.") {
    const auto& lib = Harness::get().library;
    ASSERT_TRUE(lib.problem.empty()) << lib.problem;
    EXPECT_TRUE(lib.entry_stable) << "the entry returned a different descriptor pointer on its "
                                     "second call; it must return the same pointer every time";
}

CONFORMANCE_CHECK(descriptor_header, Gate::loaded,
                  "The descriptor's frozen header says ABI major 1, a minor this host has, and a "
                  "struct_size covering ABI 1.0's descriptor.") {
    const auto& d = descriptor();
    EXPECT_EQ(d.abi_major, RADIAL_RT_ABI_MAJOR)
        << "the descriptor targets runtime ABI " << d.abi_major << "." << d.abi_minor
        << ", this host speaks " << RADIAL_RT_ABI_MAJOR << "." << RADIAL_RT_ABI_MINOR
        << "; rebuild the plugin against plugin-api " << RADIAL_RT_ABI_MAJOR << ".x";
    EXPECT_LE(d.abi_minor, RADIAL_RT_ABI_MINOR)
        << "the descriptor needs host ABI minor " << d.abi_minor << ", this host has "
        << RADIAL_RT_ABI_MINOR
        << "; lower Info::min_host_minor if the plugin checks struct sizes before using newer "
           "host fields";
    EXPECT_GE(d.struct_size, kDescriptorSize_1_0)
        << "the descriptor's struct_size is " << d.struct_size << " bytes, smaller than ABI "
        << "1.0's " << kDescriptorSize_1_0 << "; set it to sizeof(radial_runtime_descriptor)";
}

CONFORMANCE_CHECK(descriptor_functions, Gate::loaded,
                  "The descriptor carries every required function (create, destroy, run, "
                  "list_by_label, kill), each covered by struct_size and non-NULL.") {
    for (const char* name : host::missing_required_functions(descriptor()))
        ADD_FAILURE() << "the descriptor lacks the required function '" << name
                      << "' (absent from struct_size or NULL)";
}

CONFORMANCE_CHECK(descriptor_identity, Gate::loaded,
                  "The runtime id matches [a-z0-9-]{1,32}, and the name and version are "
                  "non-empty UTF-8 of at most 256 bytes.") {
    const auto& d = descriptor();
    ASSERT_TRUE(RADIAL_HAS_FIELD(&d, radial_runtime_descriptor, version))
        << "the descriptor is too short to carry an id, a name and a version";
    for (const auto& [what, s] :
         {std::pair{"id", d.id}, std::pair{"name", d.name}, std::pair{"version", d.version}}) {
        EXPECT_FALSE(s.data == nullptr && s.size > 0)
            << "the descriptor's " << what << " has a size but a NULL data pointer";
    }
    // Sizes first: a declared size is read no further than the host reads it
    // (host::kMaxDescriptorText), so a size of terabytes fails here instead of ending the harness.
    for (const auto& [what, s] :
         {std::pair{"id", d.id}, std::pair{"name", d.name}, std::pair{"version", d.version}}) {
        if (s.size > host::kMaxDescriptorText)
            ADD_FAILURE() << "the descriptor's " << what << " is " << s.size
                          << " bytes long; at most " << host::kMaxDescriptorText
                          << " are allowed (is its size the string's length?)";
    }
    if (d.id.size > host::kMaxDescriptorText || d.name.size > host::kMaxDescriptorText ||
        d.version.size > host::kMaxDescriptorText)
        return;
    std::string_view id = to_view(d.id);
    EXPECT_TRUE(is_runtime_id(id))
        << "the runtime id '" << printable(id)
        << "' does not match [a-z0-9-]{1,32}; it is the value operators write in "
           "run.containerRuntime";
    EXPECT_FALSE(to_view(d.name).empty()) << "the descriptor's name is empty";
    EXPECT_FALSE(to_view(d.version).empty()) << "the descriptor's version is empty";
    EXPECT_TRUE(valid_utf8(to_view(d.name))) << "the descriptor's name is not valid UTF-8";
    EXPECT_TRUE(valid_utf8(to_view(d.version))) << "the descriptor's version is not valid UTF-8";
}

CONFORMANCE_CHECK(abi_negotiation, Gate::usable,
                  "This host accepts the plugin, a host of the oldest minor the plugin claims "
                  "and a newer host with a larger host struct can both create it, and a host of "
                  "another major refuses it.") {
    const auto& d = descriptor();
    // Another major: the host's negotiation must refuse the same plugin if its major differed.
    radial_runtime_descriptor other = d;
    other.abi_major = static_cast<std::uint16_t>(RADIAL_RT_ABI_MAJOR + 1);
    std::string refusal = host::descriptor_problem(&other);
    EXPECT_NE(refusal.find("rebuild the plugin"), std::string::npos)
        << "a descriptor claiming ABI major " << other.abi_major
        << " was not refused by the host's negotiation (got: '" << refusal << "')";

    // The oldest host the plugin claims to support: its own abi_minor, with the 1.0 struct.
    RawStatus old_host = raw_create_destroy(host_struct(kHostSize_1_0, d.abi_minor));
    EXPECT_EQ(old_host.status, RADIAL_OK)
        << "create failed for a host of ABI 1." << d.abi_minor << " (the minor the plugin says "
        << "it needs) with a " << kHostSize_1_0 << "-byte radial_host: status " << old_host.status
        << ": " << old_host.message;

    // A newer host: a larger, zero-padded radial_host and a higher minor. The plugin must read
    // only the fields it knows.
    RawStatus new_host = raw_create_destroy(
        host_struct(sizeof(radial_host) + 64, static_cast<std::uint16_t>(RADIAL_RT_ABI_MINOR + 1)));
    EXPECT_EQ(new_host.status, RADIAL_OK)
        << "create failed for a newer host (ABI 1." << RADIAL_RT_ABI_MINOR + 1 << ", a "
        << sizeof(radial_host) + 64 << "-byte radial_host): status " << new_host.status << ": "
        << new_host.message;
}

} // namespace radial::conformance
