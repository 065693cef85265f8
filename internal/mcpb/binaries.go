package mcpb

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"strings"
)

// fatAlign is the alignment of each slice of a universal binary, as a
// power of two: 2^14 = 16 KiB, the arm64 page size (what lipo uses).
const fatAlign = 14

// universal makes one universal ("fat") Mach-O file of thin Mach-O
// executables, in the order given. The file is a big-endian fat_header
// (magic 0xcafebabe, the number of slices), one fat_arch per slice
// (cputype, cpusubtype, offset, size, align) and the slices, each at a
// 16 KiB-aligned offset, padded with zeros. Each slice is kept byte for
// byte, so its code signature stays valid.
func universal(paths ...string) ([]byte, error) {
	type slice struct {
		cpu, sub uint32
		data     []byte
	}
	var slices []slice
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		f, err := macho.NewFile(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: not a thin Mach-O file: %w", p, err)
		}
		slices = append(slices, slice{uint32(f.Cpu), f.SubCpu, data})
	}
	const headerSize, archSize = 8, 20
	align := uint32(1) << fatAlign
	var out bytes.Buffer
	put := func(v uint32) { _ = binary.Write(&out, binary.BigEndian, v) }
	put(macho.MagicFat)
	put(uint32(len(slices)))
	offset := roundUp(headerSize+archSize*uint32(len(slices)), align)
	offsets := make([]uint32, len(slices))
	for i, s := range slices {
		offsets[i] = offset
		put(s.cpu)
		put(s.sub)
		put(offset)
		put(uint32(len(s.data)))
		put(fatAlign)
		offset = roundUp(offset+uint32(len(s.data)), align)
	}
	for i, s := range slices {
		out.Write(make([]byte, int(offsets[i])-out.Len()))
		out.Write(s.data)
	}
	return out.Bytes(), nil
}

func roundUp(n, align uint32) uint32 { return (n + align - 1) &^ (align - 1) }

// checkBinary reports whether the file at path is an executable for
// goos/goarch: ELF, PE or Mach-O of the right machine.
func checkBinary(path, goos, goarch string) error {
	want := map[string]map[string]any{
		"linux":   {"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64},
		"darwin":  {"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64},
		"windows": {"amd64": uint16(pe.IMAGE_FILE_MACHINE_AMD64), "arm64": uint16(pe.IMAGE_FILE_MACHINE_ARM64)},
	}[goos][goarch]
	if want == nil {
		return fmt.Errorf("%s: no bundle platform %s/%s", path, goos, goarch)
	}
	var got any
	var err error
	switch goos {
	case "linux":
		var f *elf.File
		if f, err = elf.Open(path); err == nil {
			got = f.Machine
			if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
				err = fmt.Errorf("ELF type %v, not an executable", f.Type)
			}
			f.Close()
		}
	case "darwin":
		var f *macho.File
		if f, err = macho.Open(path); err == nil {
			got = f.Cpu
			if f.Type != macho.TypeExec {
				err = fmt.Errorf("Mach-O type %v, not an executable", f.Type)
			}
			f.Close()
		}
	case "windows":
		var f *pe.File
		if f, err = pe.Open(path); err == nil {
			got = f.Machine
			if f.Characteristics&pe.IMAGE_FILE_EXECUTABLE_IMAGE == 0 {
				err = fmt.Errorf("PE file is not an executable image")
			}
			f.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("%s is not a %s/%s executable: %w", path, goos, goarch, err)
	}
	if got != want {
		return fmt.Errorf("%s is built for %v, not %s/%s", path, got, goos, goarch)
	}
	return nil
}

// checkTag reports whether the Go binary at path was built with the build
// tag, as its build information records (go build -tags).
func checkTag(path, tag string) error {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%s: no Go build information: %w", path, err)
	}
	for _, s := range bi.Settings {
		if s.Key == "-tags" && slices.Contains(strings.Split(s.Value, ","), tag) {
			return nil
		}
	}
	return fmt.Errorf("%s was built without -tags %s: it would carry its own copy of the assets the bundle holds once", path, tag)
}
