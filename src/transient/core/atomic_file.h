// Files that are either wholly the old version or wholly the new one, even across a crash:
// write to a temporary name in the same directory, fsync, rename over the target, fsync the
// directory. Every output of the project (records, checkpoints, reports) is written this way.
#pragma once

#include <string>
#include <string_view>

namespace transient {

// Replaces `path` with `contents` atomically, the file made with `mode` (before the umask; 0600
// for a secret: the temporary is never readable by others either). Throws InputError naming the
// path if any step fails (the temporary file is removed; the previous `path`, if any, is
// untouched).
void write_file_atomically(const std::string& path, std::string_view contents,
                           unsigned mode = 0644);

// As write_file_atomically, but never replaces a file: the temporary is published under `path`
// only if nothing is there at that moment (a hard link, or a rename that refuses to replace), so a
// file created meanwhile (during a long plan) is kept. Throws InputError naming the path if `path`
// exists ("the file exists; accepted: a new file name ...") or any step fails; either way no
// temporary is left behind.
void write_new_file_atomically(const std::string& path, std::string_view contents);

// Throws InputError naming `flag` unless write_file_atomically(path, ...) can succeed as far as
// can be told beforehand: `path` is no directory, in a directory that exists and that this process
// may write. For outputs written after long work (a fit, a profile, a plan), checked first.
// `what`: what the file holds, for the refusal of a directory ("the profile").
void require_writable_output(const std::string& path, const std::string& flag,
                             const std::string& what = "");

// fsyncs the directory `dir` so that a rename or create inside it survives a crash.
void sync_directory(const std::string& dir);

// The whole file as bytes; throws InputError naming the path if it cannot be read.
std::string read_file(const std::string& path);

}  // namespace transient
