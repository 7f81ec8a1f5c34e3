package main

import (
	"fmt"
	"os"

	"github.com/ringcap/ringcap/pkg/capture/headerrules"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/dada"
)

// senderHeader reads the --header-file and --header keywords, in that order,
// checked as the receiver checks them (headerrules.CheckSetting). The keywords
// the receiver sets (HDR_SIZE, OBS_OFFSET, RINGCAP_*), which a PSRDADA header
// file usually has, are left out of the file's and returned in dropped; in
// --header they are an error.
func senderHeader(file string, kvs []string) (out []wire.HeaderField, dropped []string, err error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, nil, fmt.Errorf("read header file: %w", err)
		}
		hd, err := dada.ParseHeader(b)
		if err != nil {
			return nil, nil, fmt.Errorf("header file %s: %w", file, err)
		}
		for _, f := range hd.Fields() {
			if headerrules.IsReceiverKey(f[0]) {
				dropped = append(dropped, f[0])
				continue
			}
			if err := headerrules.CheckSetting(f[0], f[1]); err != nil {
				return nil, nil, fmt.Errorf("header file %s: %w", file, err)
			}
			out = append(out, wire.HeaderField{Key: f[0], Value: f[1]})
		}
	}
	settings, err := headerSettings(kvs)
	if err != nil {
		return nil, nil, err
	}
	for _, kv := range settings {
		out = append(out, wire.HeaderField{Key: kv[0], Value: kv[1]})
	}
	return out, dropped, nil
}
