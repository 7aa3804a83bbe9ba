// tests/host/fs/socket_file_access_test.cpp — the mode and owner of a socket file just bound in a
// directory a box user may own (host/fs/socket_file_access.h, docs/design.md §9.7): the socket
// radiald bound gets them; a link put in its place (to a host file root owns), a plain file, or a
// socket someone else made is left as it is, and the refusal says so.
#include "fs/socket_file_access.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "../../support/temp_dir.h"

namespace radial::fs_util {
namespace {

// A unix socket bound at `path` (the descriptor closed: the file stays).
void bind_socket_file(const std::string& path) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
    ::close(fd);
}

struct stat stat_of(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st;
}

TEST(SocketFileAccess, TheSocketJustBoundGetsItsModeAndOwner) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (giving a file to another uid)";
    test::TempDir dir("radial-sockaccess");
    const std::string path = dir.path() + "/egress.sock";
    bind_socket_file(path);
    EXPECT_EQ(set_socket_file_access(path, 0600, std::pair<uid_t, gid_t>{65534, 65534}), "");
    const struct stat st = stat_of(path);
    EXPECT_EQ(st.st_mode & 07777, 0600u);
    EXPECT_EQ(st.st_uid, 65534u);
    EXPECT_EQ(st.st_gid, 65534u);
    const std::string open = dir.path() + "/open.sock";
    bind_socket_file(open);
    EXPECT_EQ(set_socket_file_access(open, 0666, std::nullopt), "");
    EXPECT_EQ(stat_of(open).st_mode & 07777, 0666u);
    EXPECT_EQ(stat_of(open).st_uid, ::geteuid());
}

TEST(SocketFileAccess, WhatReplacedTheSocketIsLeftAsItIs) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (a box's link against root's chmod)";
    test::TempDir dir("radial-sockaccess");
    const std::string host_file = dir.path() + "/host-file"; // stands in for /usr/bin/sudo
    std::ofstream(host_file) << "x";
    ASSERT_EQ(::chmod(host_file.c_str(), 04755), 0);
    const std::string link = dir.path() + "/egress.sock";
    ASSERT_EQ(::symlink(host_file.c_str(), link.c_str()), 0);
    const std::string refusal =
        set_socket_file_access(link, 0600, std::pair<uid_t, gid_t>{65534, 65534});
    EXPECT_NE(refusal, "");
    EXPECT_EQ(stat_of(host_file).st_mode & 07777, 04755u) << "the link was followed";
    EXPECT_EQ(stat_of(host_file).st_uid, 0u);
    EXPECT_EQ(stat_of(link).st_uid, 0u) << "the link itself was given away";

    EXPECT_NE(set_socket_file_access(host_file, 0600, std::nullopt), "") << "a plain file";
    EXPECT_EQ(stat_of(host_file).st_mode & 07777, 04755u);

    const std::string theirs = dir.path() + "/theirs.sock";
    bind_socket_file(theirs);
    ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
    ASSERT_EQ(::chmod(theirs.c_str(), 0640), 0);
    EXPECT_NE(set_socket_file_access(theirs, 0666, std::nullopt), "") << "another uid's socket";
    EXPECT_EQ(stat_of(theirs).st_mode & 07777, 0640u);
    EXPECT_NE(set_socket_file_access(dir.path() + "/missing.sock", 0600, std::nullopt), "");
}

} // namespace
} // namespace radial::fs_util
