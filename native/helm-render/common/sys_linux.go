package render

import "syscall"

// What Linux and macOS name differently: sys_darwin.go holds the same functions.

// fileTimes: a file's modification and change times.
func fileTimes(st *syscall.Stat_t) (modified, changed syscall.Timespec) {
	return st.Mtim, st.Ctim
}

// duplicate points file descriptor to at from's file (dup2; Linux on arm64 has only dup3).
func duplicate(from, to int) error {
	return syscall.Dup3(from, to, 0)
}
