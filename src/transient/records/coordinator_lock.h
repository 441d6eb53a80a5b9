// Whether a coordinator runs a job, told from its lock (kLockFile) without taking it. The
// coordinator running a job holds an flock on JOB/.coordinator.lock, which the kernel lets go
// however its process ends; a job without summary.json whose lock nobody holds was left by a
// coordinator that was killed or crashed. Taking the lock to test it, even shared and for an
// instant, would make a coordinator starting at that moment refuse the job, so the kernel's list
// of held locks, /proc/locks, is read instead.
//
// Only what this machine's kernel can see is told: a lock file on a file system other hosts may
// share (NFS, CIFS, FUSE, Ceph, ...: their locks are on the server or on other clients), one of
// a kind whose inode numbers /proc/locks may show otherwise than stat (overlayfs of older
// kernels), or a /proc of a PID namespace other than the initial one (the locks of processes it
// cannot see, such as another container's, are left out of /proc/locks) is kUnknown. Thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace transient::records {

enum class CoordinatorLock {
  kUnknown,  // cannot be told here (see above), or no lock file: a job of an earlier version
  kHeld,     // a process of this machine holds it: the job's coordinator runs
  kFree,     // on this machine's file system, and nobody holds it: no coordinator runs the job
};

// Whether the lock file at `lock_path` is held; never takes it and never throws.
CoordinatorLock probe_coordinator_lock(const std::string& lock_path);

// The rule on the text of /proc/locks: kHeld if a lock held (not waited for) is on inode `inode`,
// else kFree; kUnknown if a line is not as the kernel writes it. The device is not compared:
// /proc/locks names the file system's own device where stat names a btrfs subvolume's, and a
// lock on another file system's inode of the same number only keeps the job "running".
CoordinatorLock lock_in_proc_locks(const std::string& proc_locks, std::uint64_t inode);

}  // namespace transient::records
