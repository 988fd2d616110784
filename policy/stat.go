package policy

import (
	"os"
	"syscall"
	"time"
)

type statInfo struct {
	ino   uint64
	ctime time.Time
}

func sysStat(fi os.FileInfo) (statInfo, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return statInfo{}, false
	}
	return statInfo{ino: st.Ino, ctime: time.Unix(st.Ctim.Sec, st.Ctim.Nsec)}, true
}
