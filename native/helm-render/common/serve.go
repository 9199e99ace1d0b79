package render

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"syscall"
	"unicode/utf8"
)

// Protocol is the version of the line protocol below; the Python client refuses a server that speaks another.
//
// The server writes one JSON line when it is ready, {"protocol": 1, "helm": "v4.3.1"}, then answers each request
// line with one reply line:
//
//	{"args": ["template", NAME, CHART, FLAGS...], "objects": true}
//	  -> {"status": 0, "stdout": "...", "stderr": "...", "objects": [...], "fallback": [...]}
//	     (what the helm binary would print and its exit status; objects only when asked for and status is 0)
//	  -> {"unsupported": "why"}   (the caller runs the helm binary instead)
//	{"decode": TEXT}  -> {"objects": [...], "fallback": [...]}   (the decoder alone, for tests)
//
// It ends at the end of its input.
const Protocol = 1

// Template renders like `helm template` with f; it writes what helm logs to stderr and returns what helm prints
// on stdout, or the error helm would exit 1 with.
type Template func(f *Flags, stderr io.Writer) (string, error)

type request struct {
	Args    []string `json:"args"`
	Objects bool     `json:"objects"`
	Decode  *string  `json:"decode"`
}

// Serve answers requests on stdin until it closes (with --version: prints the ready line and exits).
// helmVersion is the linked helm's version, defaultNamespace what --namespace defaults to.
func Serve(helmVersion, defaultNamespace string, template Template) {
	ready := fmt.Sprintf(`{"protocol":%d,"helm":%q}`+"\n", Protocol, helmVersion)
	if len(os.Args) > 1 {
		if os.Args[1] != "--version" {
			fmt.Fprintf(os.Stderr, "usage: %s [--version]   (requests on stdin, one JSON line each; see serve.go)\n", os.Args[0])
			os.Exit(2)
		}
		fmt.Print(ready)
		return
	}
	// Renders allocate briefly and a lot; a server that lives for a test session can hold more garbage between
	// collections than a helm process that lives for one render.
	debug.SetGCPercent(400)
	replies := protocolOutput()
	out := bufio.NewWriterSize(replies, 1<<20)
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out.WriteString(ready)
	out.Flush()
	var buf bytes.Buffer
	for {
		line, err := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			buf.Reset()
			answer(&buf, line, defaultNamespace, template)
			buf.WriteByte('\n')
			out.Write(buf.Bytes())
			out.Flush()
		}
		if err != nil {
			return
		}
	}
}

// protocolOutput keeps the real stdout for replies and points file descriptor 1 at stderr, so nothing helm
// prints on its own (a download progress line, say) can break a reply.
func protocolOutput() *os.File {
	fd, err := syscall.Dup(1)
	if err != nil {
		return os.Stdout
	}
	if duplicate(2, 1) != nil {
		return os.Stdout
	}
	return os.NewFile(uintptr(fd), "replies")
}

func answer(buf *bytes.Buffer, line []byte, defaultNamespace string, template Template) {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		unsupported(buf, fmt.Sprintf("bad request: %v", err))
		return
	}
	if req.Decode != nil {
		buf.WriteByte('{')
		WriteObjects(buf, *req.Decode)
		buf.WriteByte('}')
		return
	}
	f, err := ParseFlags(req.Args, defaultNamespace)
	if err != nil {
		unsupported(buf, err.Error())
		return
	}
	stdout, stderr, status, err := run(f, template)
	if err != nil {
		unsupported(buf, err.Error())
		return
	}
	if !utf8.ValidString(stdout) || !utf8.ValidString(stderr) {
		unsupported(buf, "helm's output is not UTF-8 text")
		return
	}
	fmt.Fprintf(buf, `{"status":%d,"stdout":`, status)
	writeString(buf, stdout)
	buf.WriteString(`,"stderr":`)
	writeString(buf, stderr)
	if req.Objects && status == 0 {
		buf.WriteByte(',')
		WriteObjects(buf, stdout)
	}
	buf.WriteByte('}')
}

// run renders once; a panic in helm is reported as unsupported, so the binary shows the user its own crash.
func run(f *Flags, template Template) (stdout, stderr string, status int, failure error) {
	var logs strings.Builder
	defer func() {
		if p := recover(); p != nil {
			failure = fmt.Errorf("helm panicked in the server: %v", p)
		}
	}()
	stdout, err := template(f, &logs)
	if err != nil {
		var unsupported *Unsupported
		if asUnsupported(err, &unsupported) {
			return "", "", 0, unsupported
		}
		fmt.Fprintln(&logs, "Error:", err.Error()) // as cobra prints a command's error
		return "", logs.String(), 1, nil
	}
	return stdout, logs.String(), 0, nil
}

func asUnsupported(err error, target **Unsupported) bool {
	u, ok := err.(*Unsupported)
	if ok {
		*target = u
	}
	return ok
}

func unsupported(buf *bytes.Buffer, reason string) {
	buf.WriteString(`{"unsupported":`)
	writeString(buf, reason)
	buf.WriteByte('}')
}
