// host/fs/durable_file.h — publishing a file so that a reader sees all of it or none of it, and a
// crash or power cut never leaves half of it under its final name: write a private temporary file,
// fsync it, move it into place without replacing anything, fsync the directory. Used for the spool
// (docs/design.md §12.1: a half-written request is never claimed) and the persisted instance id
// (§3).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <string_view>

#include "fs/fs_error.h"

namespace radial::fs_util {

// Writes `content` into a fresh file created exclusively in `temp_dir` (mode `mode`), fsyncs it,
// then moves it to `dest` only if nothing exists there yet (renameat2 RENAME_NOREPLACE, or link(2)
// where the file system lacks it), and fsyncs dest's directory. `temp_dir` must be on dest's file
// system. Returns false, leaving nothing behind, when `dest` already exists. Throws
// FsError naming the path for any other failure; the temporary file is removed then too.
// [thread-safe]
bool publish_file(const std::filesystem::path& temp_dir, const std::filesystem::path& dest,
                  std::string_view content, mode_t mode);

// As publish_file, but `dest` is replaced when it exists (rename(2)): a reader sees the old content
// or the new, never a mix. [thread-safe; concurrent writers of one dest: the last rename wins]
void replace_file(const std::filesystem::path& temp_dir, const std::filesystem::path& dest,
                  std::string_view content, mode_t mode);

// Appends `line` (one line, ending in '\n') to the file at `path` (created mode 0600; a link there
// is refused) in one write(2) with O_APPEND, so that concurrent writers never interleave a line,
// and fsyncs it before returning: an append-only log of events (docs/design.md §13.12, §9.7).
// Throws FsError naming the path. [thread-safe]
void append_line(const std::filesystem::path& path, std::string_view line);

// How long a temporary file of publish_file or replace_file lives at most while its writer runs:
// one older is what a writer killed between its create and its rename left.
inline constexpr std::chrono::minutes kAbandonedTempFileAge{10};

// Removes from `dir` the temporary files publish_file and replace_file make (".NAME.XXXXXX")
// that a writer killed before its rename left: regular files of this process's user whose NAME
// `ours` accepts (the files the caller publishes there: nothing else in the directory is
// touched), last written at least kAbandonedTempFileAge before `now` (wall time, as the files'
// times are). One younger may be a live writer's, and stays. Returns how many were removed; never
// throws (a directory that cannot be read removes nothing). [thread-safe]
std::size_t remove_abandoned_temp_files(
    const std::filesystem::path& dir, const std::function<bool(std::string_view name)>& ours,
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now()) noexcept;

// fsync(2) of a directory, so that entries created or renamed in it survive a crash. Throws
// FsError naming the directory. [thread-safe]
void fsync_directory(const std::filesystem::path& dir);

} // namespace radial::fs_util
