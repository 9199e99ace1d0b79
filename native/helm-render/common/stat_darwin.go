package render

import "syscall"

// fileTimes: a file's modification and change times, as macOS's stat names them.
func fileTimes(st *syscall.Stat_t) (modified, changed syscall.Timespec) {
	return st.Mtimespec, st.Ctimespec
}
