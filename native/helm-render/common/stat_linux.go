package render

import "syscall"

// fileTimes: a file's modification and change times, as Linux's stat names them.
func fileTimes(st *syscall.Stat_t) (modified, changed syscall.Timespec) {
	return st.Mtim, st.Ctim
}
