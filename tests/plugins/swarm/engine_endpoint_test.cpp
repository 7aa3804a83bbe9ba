// Unit tests of the engine choice (plugins/support/engine_api/engine_endpoint.h): the runtime's
// setting, $DOCKER_HOST, the docker context and the default socket, with their TLS material, read
// from a temporary DOCKER_CONFIG directory laid out as the docker CLI lays it out. No engine.
#include "engine_api/engine_endpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>

#include "../../support/temp_dir.h"
#include "engine_api/engine_client.h"

namespace radial::engine_api {
namespace {

namespace fs = std::filesystem;

// A DOCKER_CONFIG directory of the test's own.
struct DockerConfig {
    radial::test::TempDir dir{"radial-docker-config"};
    EngineEnvironment env;

    DockerConfig() {
        env.docker_config = dir.path();
        env.home = dir / "home-without-docker"; // never the user's own ~/.docker
    }
    // Writes `content` to `rel` inside the directory, making its parent directories.
    std::string put(const std::string& rel, const std::string& content) {
        fs::path p = fs::path(dir.path()) / rel;
        fs::create_directories(p.parent_path());
        return dir.write(rel, content);
    }
    // Writes contexts/meta/<hash>/meta.json for `name`; returns the context's TLS directory.
    fs::path context(const std::string& name, const std::string& host, bool skip_verify = false) {
        const std::string hash = context_directory_name(name);
        nlohmann::json j = {
            {"Name", name},
            {"Metadata", nlohmann::json::object()},
            {"Endpoints", {{"docker", {{"Host", host}, {"SkipTLSVerify", skip_verify}}}}}};
        put("contexts/meta/" + hash + "/meta.json", j.dump());
        fs::path tls = fs::path(dir.path()) / "contexts" / "tls" / hash / "docker";
        return tls;
    }
    void current(const std::string& name) {
        put("config.json", nlohmann::json({{"currentContext", name}}).dump());
    }
};

std::string message_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    ADD_FAILURE() << "no std::invalid_argument";
    return "";
}

TEST(EngineEndpoint, TheContextDirectoryIsTheSha256OfTheName) {
    EXPECT_EQ(context_directory_name("abc"),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(EngineEndpoint, WithNothingSetItIsTheDefaultSocket) {
    DockerConfig c;
    auto r = resolve_engine("", "run.docker.host", c.env);
    EXPECT_TRUE(r.address.unix_socket);
    EXPECT_EQ(r.address.path, "/var/run/docker.sock");
    EXPECT_EQ(r.source, "the default socket");
    EXPECT_FALSE(r.address.tls);
}

TEST(EngineEndpoint, TheSettingBeatsDockerHostWhichBeatsTheContext) {
    DockerConfig c;
    c.context("remote", "tcp://10.0.0.9:2376");
    c.current("remote");
    c.env.docker_context = "remote";
    c.env.docker_host = "unix:///from-env.sock";
    auto r = resolve_engine("unix:///from-setting.sock", "run.swarm.host", c.env);
    EXPECT_EQ(r.address.path, "/from-setting.sock");
    EXPECT_EQ(r.source, "run.swarm.host");
    r = resolve_engine("", "run.swarm.host", c.env);
    EXPECT_EQ(r.address.path, "/from-env.sock");
    EXPECT_EQ(r.source, "$DOCKER_HOST");
    c.env.docker_host.clear();
    r = resolve_engine("", "run.swarm.host", c.env);
    EXPECT_EQ(r.address.host, "10.0.0.9");
    EXPECT_EQ(r.address.port, "2376");
    EXPECT_EQ(r.source, "docker context 'remote' ($DOCKER_CONTEXT)");
}

TEST(EngineEndpoint, DockerContextBeatsCurrentContextAndDefaultIsTheDefaultSocket) {
    DockerConfig c;
    c.context("a", "tcp://10.0.0.1:2375");
    c.context("b", "tcp://10.0.0.2:2375");
    c.current("a");
    auto r = resolve_engine("", "run.docker.host", c.env);
    EXPECT_EQ(r.address.host, "10.0.0.1");
    EXPECT_EQ(r.source, "docker context 'a' (currentContext in " + (c.dir / "config.json") + ")");
    EXPECT_FALSE(r.address.tls); // no TLS material, no SkipTLSVerify: plain tcp, as docker does
    c.env.docker_context = "b";
    EXPECT_EQ(resolve_engine("", "run.docker.host", c.env).address.host, "10.0.0.2");
    c.env.docker_context = "default";
    r = resolve_engine("", "run.docker.host", c.env);
    EXPECT_EQ(r.address.path, "/var/run/docker.sock");
    EXPECT_EQ(r.source, "the default socket");
}

TEST(EngineEndpoint, WithoutDockerConfigTheConfigIsInHomeDotDocker) {
    DockerConfig c;
    c.env.home = c.dir.path();
    c.env.docker_config.clear();
    const std::string hash = context_directory_name("h");
    c.put(".docker/config.json", R"({"currentContext": "h"})");
    c.put(".docker/contexts/meta/" + hash + "/meta.json",
          R"({"Name":"h","Endpoints":{"docker":{"Host":"unix:///h.sock"}}})");
    EXPECT_EQ(resolve_engine("", "run.docker.host", c.env).address.path, "/h.sock");
}

TEST(EngineEndpoint, AContextsTlsMaterialAndSkipTlsVerifyAreTaken) {
    DockerConfig c;
    fs::path tls = c.context("secure", "tcp://127.0.0.1:2376");
    const std::string rel = fs::relative(tls, c.dir.path()).string();
    c.put(rel + "/ca.pem", "ca");
    c.put(rel + "/cert.pem", "cert");
    c.put(rel + "/key.pem", "key");
    c.env.docker_context = "secure";
    auto r = resolve_engine("", "run.docker.host", c.env);
    ASSERT_TRUE(r.address.tls);
    EXPECT_EQ(r.address.tls->ca_file, (tls / "ca.pem").string());
    EXPECT_EQ(r.address.tls->cert_file, (tls / "cert.pem").string());
    EXPECT_EQ(r.address.tls->key_file, (tls / "key.pem").string());
    EXPECT_FALSE(r.address.tls->skip_verify);
    EXPECT_NE(r.address.tls->origin.find("docker context 'secure'"), std::string::npos);

    c.context("insecure", "tcp://127.0.0.1:2376", true);
    c.env.docker_context = "insecure";
    r = resolve_engine("", "run.docker.host", c.env);
    ASSERT_TRUE(r.address.tls);
    EXPECT_TRUE(r.address.tls->skip_verify);
    EXPECT_EQ(r.address.tls->ca_file, "");
}

TEST(EngineEndpoint, DockerTlsVerifyTakesTheCertPathOrTheConfigDirectory) {
    DockerConfig c;
    c.env.docker_host = "tcp://127.0.0.1:2376";
    EXPECT_FALSE(resolve_engine("", "run.docker.host", c.env).address.tls);
    c.env.docker_tls_verify = "1";
    // Verifying needs the CA, as the docker CLI says: never the system's CAs instead.
    std::string m = message_of([&] { resolve_engine("", "run.docker.host", c.env); });
    EXPECT_NE(m.find("no " + (c.dir / "ca.pem")), std::string::npos) << m;
    EXPECT_NE(m.find("$DOCKER_HOST"), std::string::npos) << m;
    c.put("ca.pem", "ca");
    auto r = resolve_engine("", "run.docker.host", c.env);
    ASSERT_TRUE(r.address.tls); // no client certificate
    EXPECT_EQ(r.address.tls->cert_file, "");
    c.put("cert.pem", "cert");
    c.put("key.pem", "key");
    r = resolve_engine("", "run.docker.host", c.env);
    ASSERT_TRUE(r.address.tls);
    EXPECT_EQ(r.address.tls->ca_file, c.dir / "ca.pem");
    EXPECT_EQ(r.address.tls->cert_file, c.dir / "cert.pem");
    radial::test::TempDir certs("radial-certs");
    certs.write("ca.pem", "other");
    c.env.docker_cert_path = certs.path();
    r = resolve_engine("tcp://127.0.0.1:2377", "run.docker.host", c.env);
    ASSERT_TRUE(r.address.tls);
    EXPECT_EQ(r.address.tls->ca_file, certs / "ca.pem");
    EXPECT_EQ(r.address.tls->cert_file, "");
    EXPECT_EQ(r.address.tls->origin, "$DOCKER_CERT_PATH " + certs.path());
    // A unix socket never speaks TLS.
    EXPECT_FALSE(resolve_engine("unix:///x.sock", "run.docker.host", c.env).address.tls);
}

TEST(EngineEndpoint, ProblemsAreNamedAndNeverFallBackToTheDefaultSocket) {
    DockerConfig c;
    c.env.docker_context = "gone";
    std::string m = message_of([&] { resolve_engine("", "run.docker.host", c.env); });
    EXPECT_NE(m.find("docker context 'gone' ($DOCKER_CONTEXT) does not exist"), std::string::npos)
        << m;
    EXPECT_NE(m.find(context_directory_name("gone") + "/meta.json"), std::string::npos) << m;
    EXPECT_NE(m.find("docker context ls"), std::string::npos) << m;

    c.env.docker_context.clear();
    c.put("config.json", "{not json");
    m = message_of([&] { resolve_engine("", "run.docker.host", c.env); });
    EXPECT_NE(m.find(c.dir / "config.json"), std::string::npos) << m;

    c.current("ssh");
    c.context("ssh", "ssh://me@host");
    m = message_of([&] { resolve_engine("", "run.docker.host", c.env); });
    EXPECT_NE(m.find("docker context 'ssh'"), std::string::npos) << m;
    EXPECT_NE(m.find("ssh://"), std::string::npos) << m;

    c.env.docker_host = "tcp://127.0.0.1:2376";
    c.env.docker_tls_verify = "1";
    c.put("ca.pem", "ca");
    c.put("cert.pem", "cert"); // without key.pem
    m = message_of([&] { resolve_engine("", "run.docker.host", c.env); });
    EXPECT_NE(m.find(c.dir / "cert.pem"), std::string::npos) << m;
    EXPECT_NE(m.find("key.pem"), std::string::npos) << m;

    // The setting's own value: its key is named once, by whoever reports the setting's error
    // (the host prefixes "run.docker.host: "), and $DOCKER_HOST's is named as such.
    m = message_of([&] { resolve_engine("ssh://x", "run.docker.host", c.env); });
    EXPECT_EQ(m.find("run.docker.host"), std::string::npos) << m;
    EXPECT_NE(m.find("'ssh://x' is not an engine address"), std::string::npos) << m;
    c.env.docker_host = "ssh://y";
    m = message_of([&] { resolve_engine("", "run.docker.host", c.env); });
    EXPECT_EQ(m.rfind("$DOCKER_HOST: 'ssh://y' is not an engine address", 0), 0u) << m;
}

TEST(EngineEndpoint, TlsMaterialThatDoesNotLoadIsNamedWhenTheClientIsMade) {
    radial::test::TempDir certs("radial-certs");
    EngineAddress a = parse_engine_address("tcp://127.0.0.1:2376");
    a.tls = EngineTls{certs / "ca.pem", "", "", false, "$DOCKER_CERT_PATH " + certs.path()};
    std::string m = message_of([&] { EngineClient c(a, std::chrono::seconds(1)); });
    EXPECT_NE(m.find(certs / "ca.pem"), std::string::npos) << m;
    EXPECT_NE(m.find("not a readable file"), std::string::npos) << m;
    certs.write("ca.pem", "not a certificate");
    m = message_of([&] { EngineClient c(a, std::chrono::seconds(1)); });
    EXPECT_NE(m.find("cannot load the CA certificate '" + (certs / "ca.pem") + "'"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("$DOCKER_CERT_PATH"), std::string::npos) << m;
}

} // namespace
} // namespace radial::engine_api
