// The allowlist's pins (docs/design.md §6.5), without a runtime: which digests an image is held
// to, and that a pinned entry admits its image by pattern before the digest is checked.
#include "turn/image_pin.h"

#include <gtest/gtest.h>

#include "../../support/instance_config.h"
#include "../../support/temp_dir.h"
#include "turn/request_policy.h"

namespace radial::turn {
namespace {

const std::string kA = "sha256:" + std::string(64, 'a');
const std::string kB = "sha256:" + std::string(64, 'b');

TEST(ImagePin, SplitsAnEntryIntoPatternAndDigest) {
    EXPECT_EQ(split_allowed_image("radial/busybox:*@" + kA).pattern, "radial/busybox:*");
    EXPECT_EQ(split_allowed_image("radial/busybox:*@" + kA).digest, kA);
    EXPECT_EQ(split_allowed_image("radial/*").digest, "");
}

TEST(ImagePin, AnUnpinnedEntryAdmitsAnyDigestAndPinnedOnesHoldTheImageToTheirs) {
    auto cfg = test::instance_config();
    cfg.allowed_images = {"radial/busybox:latest@" + kA, "radial/busybox:*@" + kB, "other/*"};
    EXPECT_EQ(pinned_digests("radial/busybox:latest", cfg), (std::vector<std::string>{kA, kB}));
    EXPECT_EQ(pinned_digests("radial/busybox:1", cfg), (std::vector<std::string>{kB}));
    EXPECT_TRUE(pinned_digests("other/x", cfg).empty());
    // Admitted by its pattern; the digest is the turn's start's to check.
    EXPECT_EQ(check_image("radial/busybox:1", cfg), "radial/busybox:1");
    EXPECT_THROW(check_image("third/x", cfg), RequestError);
}

TEST(ImagePin, TheConfigRefusesAPinThatIsNoDigest) {
    test::TempDir d;
    auto f = d.write("p.toml", "[run]\nallowedImages = [\"x@sha256:abc\"]\n");
    try {
        config::load(f, std::nullopt, "/x/bin");
        FAIL() << "a short digest was accepted";
    } catch (const config::ConfigError& e) {
        EXPECT_EQ(std::string(e.what()),
                  f + ":2:17: run.allowedImages: 'x@sha256:abc' pins no digest: give "
                      "PATTERN@sha256: and the 64 lower-case hex digits of the image's content "
                      "digest");
    }
    auto ok = config::load(d.write("ok.toml", "[run]\nallowedImages = [\"x@" + kA + "\"]\n"),
                           std::nullopt, "/x/bin");
    EXPECT_EQ(ok.allowed_images, (std::vector<std::string>{"x@" + kA}));
}

} // namespace
} // namespace radial::turn
