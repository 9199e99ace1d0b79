package render

import "syscall"

// What Linux and macOS name differently: sys_linux.go holds the same functions.

// fileTimes: a file's modification and change times.
func fileTimes(st *syscall.Stat_t) (modified, changed syscall.Timespec) {
	return st.Mtimespec, st.Ctimespec
}

// duplicate points file descriptor to at from's file (dup2).
func duplicate(from, to int) error {
	return syscall.Dup2(from, to)
}
