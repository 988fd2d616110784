// Command pagedread reads a host file through the daemon's
// proxmox_host_file_read tool page by page, as an MCP client on the node
// would (mcp-go's Streamable HTTP client), checks every page, and prints
// one JSON object: the pages, the bytes, the SHA-256 of the bytes it read,
// the SHA-256 the tool reported for the file, and how long the read took.
// For the booted test of paged reads (TestBootedExec): built without the
// race detector, which made the test binary decode each page's 2.8 MB
// answer at under 1 MB/s.
//
// `pagedread -url URL -path /srv/big.bin -page 1048576` with the bearer
// key in $PMCP_KEY. It exits 1 naming the page that failed.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Report is what pagedread prints.
type Report struct {
	Pages int   `json:"pages"`
	Bytes int64 `json:"bytes"`
	// SHA256 is the hash of the bytes read; ToolSHA256 is the file's hash
	// as the tool reported it on every page.
	SHA256     string  `json:"sha256"`
	ToolSHA256 string  `json:"tool_sha256"`
	Seconds    float64 `json:"seconds"`
}

// page is the part of the tool's structured answer that is checked.
type page struct {
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
	Offset   int64  `json:"offset"`
	Length   int    `json:"length"`
	EOF      bool   `json:"eof"`
	Encoding string `json:"encoding"`
	Data     string `json:"data"`
}

func main() {
	url := flag.String("url", "", "the daemon's MCP endpoint")
	path := flag.String("path", "", "the host file to read")
	size := flag.Int("page", 1<<20, "bytes asked for in each call")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rep, err := read(ctx, *url, os.Getenv("PMCP_KEY"), *path, *size)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pagedread:", err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(rep) //nolint:errcheck // stdout
}

func read(ctx context.Context, url, key, path string, size int) (Report, error) {
	if url == "" || key == "" || path == "" {
		return Report{}, errors.New("-url, -path and $PMCP_KEY are needed")
	}
	mc, err := client.NewStreamableHttpClient(url, mcptransport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + key}))
	if err != nil {
		return Report{}, err
	}
	defer mc.Close()
	if err := mc.Start(ctx); err != nil {
		return Report{}, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "pagedread", Version: "1"}
	if _, err := mc.Initialize(ctx, init); err != nil {
		return Report{}, fmt.Errorf("initialize: %w", err)
	}
	var rep Report
	sum := sha256.New()
	start := time.Now()
	for off := int64(0); ; {
		p, err := readPage(ctx, mc, path, off, size)
		if err != nil {
			return rep, fmt.Errorf("page at %d: %w", off, err)
		}
		data, err := p.bytes()
		if err != nil {
			return rep, fmt.Errorf("page at %d: %w", off, err)
		}
		switch {
		case p.Offset != off || p.Length != len(data):
			return rep, fmt.Errorf("page at %d: offset %d and length %d for %d bytes", off, p.Offset, p.Length, len(data))
		case rep.Pages > 0 && p.SHA256 != rep.ToolSHA256:
			return rep, fmt.Errorf("page at %d: the file's sha256 %s, where the first page said %s", off, p.SHA256, rep.ToolSHA256)
		}
		rep.ToolSHA256 = p.SHA256
		sum.Write(data)
		rep.Pages++
		rep.Bytes += int64(len(data))
		off += int64(len(data))
		if p.EOF {
			if off != p.Size {
				return rep, fmt.Errorf("eof at %d of a file of %d bytes", off, p.Size)
			}
			break
		}
		if len(data) == 0 {
			return rep, fmt.Errorf("page at %d: empty before the end", off)
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	rep.SHA256 = hex.EncodeToString(sum.Sum(nil))
	return rep, nil
}

func readPage(ctx context.Context, mc *client.Client, path string, off int64, size int) (page, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = "proxmox_host_file_read"
	req.Params.Arguments = map[string]any{"path": path, "offset": off, "length": size}
	res, err := mc.CallTool(ctx, req)
	if err != nil {
		return page{}, err
	}
	if res.IsError {
		return page{}, fmt.Errorf("the tool failed: %v", res.Content)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return page{}, err
	}
	var p page
	if err := json.Unmarshal(raw, &p); err != nil {
		return page{}, fmt.Errorf("structured content: %w", err)
	}
	return p, nil
}

func (p page) bytes() ([]byte, error) {
	switch p.Encoding {
	case "base64":
		return base64.StdEncoding.DecodeString(p.Data)
	case "utf-8":
		return []byte(p.Data), nil
	}
	return nil, fmt.Errorf("encoding %q", p.Encoding)
}
