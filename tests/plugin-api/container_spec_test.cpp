// The ContainerSpec <-> radial_spec conversion both sides of the ABI rely on, including the
// growth rules: arrays stepped by elem_size, fields beyond struct_size read as unset.
#include <gtest/gtest.h>

#include <radial/container_spec.hpp>

namespace radial {
namespace {

ContainerSpec full_spec() {
    ContainerSpec s;
    s.label = "radial-turn-i-1";
    s.image = "img:1";
    s.mounts = {{"/host/a b", "/work", false, true}, {"/host/ro", "/ro", true}};
    s.argv = {"sh", "-c", "echo 'it''s' $X\nnext"};
    s.env = {{"A", "1;2\n3", false},
             {"KEY",
              "s\xc3\xa9"
              "cret",
              true}};
    s.workdir = "/work";
    s.timeout_ms = 1500;
    s.host_ports = {8080, 9090};
    s.pids_limit = 64;
    s.read_only_rootfs = Tristate::no;
    s.user = "1000:1000";
    s.tmpfs = {{"/tmp", 1 << 20}};
    s.extra_hosts = {"db:127.0.0.1"};
    s.memory_bytes = 1ull << 30;
    s.network = "host";
    s.cpus_milli = 1500;
    s.egress = {"pypi.org:443", "*.pythonhosted.org:443"};
    s.stop_grace_ms = 2500;
    return s;
}

TEST(ContainerSpec, RoundTripsThroughTheCStruct) {
    auto s = full_spec();
    CSpec c(s);
    EXPECT_EQ(c.get()->struct_size, sizeof(radial_spec));
    EXPECT_EQ(from_c(*c.get()), s);
}

// Additions chained to `next` (radial_spec_ext): the egress one is read, an unknown type is stepped
// over, and a spec without any carries none.
TEST(ContainerSpec, ChainedAdditionsAreReadAndUnknownOnesSteppedOver) {
    auto s = full_spec();
    CSpec c(s);
    ASSERT_NE(c.get()->next, nullptr);
    radial_spec with_unknown = *c.get();
    struct {
        radial_spec_ext head;
        std::uint64_t payload;
    } unknown{{sizeof(unknown), 999, c.get()->next}, 7};
    with_unknown.next = &unknown;
    EXPECT_EQ(from_c(with_unknown).egress, s.egress);
    EXPECT_EQ(from_c(with_unknown).stop_grace_ms, 2500u);
    EXPECT_EQ(from_c(with_unknown).mounts, s.mounts);
    s.egress.clear();
    s.stop_grace_ms = 0;
    for (auto& m : s.mounts) m.receives_host_mounts = false;
    CSpec none(s);
    EXPECT_EQ(none.get()->next, nullptr);
    EXPECT_TRUE(from_c(*none.get()).egress.empty());
}

// A propagation target that names no mount of the spec is not dropped: it arrives as a receiving
// mount without a source, which a runtime's mount checks refuse.
TEST(ContainerSpec, APropagationTargetNamingNoMountArrivesAsAMountWithoutASource) {
    auto s = full_spec();
    CSpec c(s);
    radial_spec stray = *c.get();
    const radial_str target{"/nowhere", 8};
    radial_spec_propagation p{};
    p.struct_size = sizeof p;
    p.type = RADIAL_SPEC_EXT_PROPAGATION;
    p.next = c.get()->next;
    p.targets = radial_array{&target, 1, sizeof(radial_str)};
    stray.next = &p;
    const auto got = from_c(stray).mounts;
    ASSERT_EQ(got.size(), s.mounts.size() + 1);
    EXPECT_EQ(got.back(), (Mount{"", "/nowhere", false, true}));
}

TEST(ContainerSpec, HostStringsAreNulTerminated) {
    auto s = full_spec();
    CSpec c(s);
    EXPECT_EQ(c.get()->label.data[c.get()->label.size], '\0');
}

TEST(ContainerSpec, FieldsBeyondTheWritersSizeReadAsUnset) {
    auto s = full_spec();
    CSpec c(s);
    radial_spec older = *c.get();
    older.struct_size = offsetof(radial_spec, workdir); // a writer that knew only the first fields
    auto r = from_c(older);
    EXPECT_EQ(r.label, s.label);
    EXPECT_EQ(r.env, s.env);
    EXPECT_EQ(r.workdir, "");
    EXPECT_EQ(r.timeout_ms, 0u);
    EXPECT_EQ(r.cpus_milli, 0u);
}

TEST(ContainerSpec, ArraysAreSteppedByElemSize) {
    struct BiggerMount { // a newer host's mount, with a field appended
        radial_mount m;
        std::uint64_t added;
    };
    std::string a = "/a", b = "/b", t1 = "/t1", t2 = "/t2";
    BiggerMount items[2] = {{{to_c(a), to_c(t1), 1, 0}, 7}, {{to_c(b), to_c(t2), 0, 0}, 9}};
    radial_spec c{};
    c.struct_size = sizeof(c);
    c.mounts = radial_array{items, 2, sizeof(BiggerMount)};
    auto s = from_c(c);
    ASSERT_EQ(s.mounts.size(), 2u);
    EXPECT_EQ(s.mounts[1], (Mount{"/b", "/t2", false}));
    EXPECT_TRUE(s.mounts[0].read_only);
}

TEST(ContainerSpec, CarriedFieldsFollowWhatIsSet) {
    ContainerSpec s;
    s.label = "l";
    s.image = "i";
    s.argv = {"true"};
    EXPECT_EQ(carried_fields(s),
              (std::vector<std::uint32_t>{RADIAL_FIELD_LABEL, RADIAL_FIELD_IMAGE, RADIAL_FIELD_ARGV,
                                          RADIAL_FIELD_ON_OUTPUT}));
    EXPECT_EQ(carried_fields(full_spec()).size(), 17u);
}

TEST(ContainerSpec, FieldNamesUseTheAdrSpelling) {
    EXPECT_EQ(field_name(RADIAL_FIELD_TIMEOUT_MS), "timeoutMs");
    EXPECT_EQ(field_name(RADIAL_FIELD_READ_ONLY_ROOTFS), "readOnlyRootfs");
    EXPECT_EQ(field_name(RADIAL_FIELD_CPUS), "cpus");
    EXPECT_EQ(field_name(99), "field#99");
}

} // namespace
} // namespace radial
