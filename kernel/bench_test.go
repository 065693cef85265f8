package kernel

import (
	"context"
	"slices"
	"testing"
	"time"
)

// These benchmarks measure what bench/jupyter_client_bench.py measures with
// Python's jupyter_client, so the two can be compared on one machine:
//
//	go test -run '^$' -bench 'RoundTrip' -benchtime 300x ./kernel/
//	go test -run '^$' -bench 'Stdout10MB|KernelStart' -benchtime 5x ./kernel/
//	python3 bench/jupyter_client_bench.py
//
// Each reports the median of its per-iteration times as ms/median, the
// figure the script prints as "median ms". The kernels listen where Start
// puts them (ipc sockets outside Windows); the ...TCP benchmarks measure
// the same over loopback TCP, Windows' transport.

const (
	roundTripCode = "1+1"
	stdoutCode    = "for _ in range(10240): print('x'*1023)" // 10240 lines of 1 KiB
	stdoutBytes   = 10 * 1024 * 1024
	warmUps       = 20
)

// useScheme switches the sockets' zmq4 transport for one benchmark to TCP,
// buffered (bufferedTCP) or zmq4's own ("tcp"); "" leaves Start's transport.
func useScheme(b *testing.B, scheme string) {
	if scheme == "" {
		return
	}
	useLocalTransport(b, "tcp")
	old := endpointScheme
	endpointScheme = scheme
	b.Cleanup(func() { endpointScheme = old })
}

// reportCPU reports the client's CPU time per iteration since start (see
// processCPU), which a loaded machine disturbs less than wall time.
func reportCPU(b *testing.B, start time.Duration) {
	if n := b.N; n > 0 && start > 0 {
		b.ReportMetric(float64(processCPU()-start)/float64(n)/float64(time.Millisecond), "cpu-ms/op")
	}
}

func reportMedian(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	b.ReportMetric(float64(median(d))/float64(time.Millisecond), "ms/median")
}

// median sorts d and returns its median; d is not empty.
func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	med := d[len(d)/2]
	if len(d)%2 == 0 {
		med = (d[len(d)/2-1] + d[len(d)/2]) / 2
	}
	return med
}

func BenchmarkExecuteRoundTrip(b *testing.B) { benchRoundTrip(b, "", Options{}) }

// BenchmarkExecuteRoundTripTCP is BenchmarkExecuteRoundTrip over loopback TCP.
func BenchmarkExecuteRoundTripTCP(b *testing.B) { benchRoundTrip(b, bufferedTCP, Options{}) }

// BenchmarkExecuteRoundTripStock is BenchmarkExecuteRoundTrip on ipykernel
// started exactly as jupyter_client starts it: the like-for-like comparison
// with bench/jupyter_client_bench.py.
func BenchmarkExecuteRoundTripStock(b *testing.B) {
	benchRoundTrip(b, "", Options{StockIPyKernel: true})
}

// BenchmarkExecuteRoundTripUnbuffered is BenchmarkExecuteRoundTripStock over
// zmq4's own tcp transport, to measure what the buffered one gains; it is
// BenchmarkExecuteRoundTripBuffered's counterpart.
func BenchmarkExecuteRoundTripUnbuffered(b *testing.B) {
	benchRoundTrip(b, "tcp", Options{StockIPyKernel: true})
}

// BenchmarkExecuteRoundTripBuffered is BenchmarkExecuteRoundTripStock over
// the buffered TCP transport.
func BenchmarkExecuteRoundTripBuffered(b *testing.B) {
	benchRoundTrip(b, bufferedTCP, Options{StockIPyKernel: true})
}

// benchRoundTrip times `1+1` until both execute_reply and idle arrived.
func benchRoundTrip(b *testing.B, scheme string, opts Options) {
	useScheme(b, scheme)
	k := startKernel(b, opts)
	ctx := context.Background()
	check := func() {
		res, err := k.Execute(ctx, roundTripCode, ExecuteOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if n := len(res.Outputs); n == 0 {
			b.Fatalf("no outputs")
		} else if s, _ := res.Outputs[n-1].String("text/plain"); s != "2" {
			b.Fatalf("result %q, want 2", s)
		}
	}
	for range warmUps {
		check()
	}
	var d []time.Duration
	cpu := processCPU()
	for b.Loop() {
		t0 := time.Now()
		check()
		d = append(d, time.Since(t0))
	}
	reportCPU(b, cpu)
	reportMedian(b, d)
}

func BenchmarkStdout10MB(b *testing.B) { benchStdout(b, "") }

// BenchmarkStdout10MBTCP is BenchmarkStdout10MB over loopback TCP.
func BenchmarkStdout10MBTCP(b *testing.B) { benchStdout(b, bufferedTCP) }

// BenchmarkStdout10MBUnbuffered is BenchmarkStdout10MBTCP over zmq4's own
// tcp transport. All run stock ipykernel, like the Python script.
func BenchmarkStdout10MBUnbuffered(b *testing.B) { benchStdout(b, "tcp") }

// benchStdout times 10 MiB of printed text, all of which must arrive.
func benchStdout(b *testing.B, scheme string) {
	useScheme(b, scheme)
	k := startKernel(b, Options{StockIPyKernel: true})
	ctx := context.Background()
	var d []time.Duration
	cpu := processCPU()
	for b.Loop() {
		t0 := time.Now()
		res, err := k.Execute(ctx, stdoutCode, ExecuteOptions{})
		d = append(d, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		total := 0
		for _, o := range res.Outputs {
			if o.Type == OutputStream {
				total += len(o.Text)
			}
		}
		if total != stdoutBytes {
			b.Fatalf("got %d bytes of stream text, want %d", total, stdoutBytes)
		}
	}
	b.SetBytes(stdoutBytes)
	reportCPU(b, cpu)
	reportMedian(b, d)
}

// BenchmarkKernelStart times Start until the kernel is ready; Close is not
// timed.
func BenchmarkKernelStart(b *testing.B) { benchStart(b, "") }

// BenchmarkKernelStartTCP is BenchmarkKernelStart over loopback TCP.
func BenchmarkKernelStartTCP(b *testing.B) { benchStart(b, bufferedTCP) }

func benchStart(b *testing.B, scheme string) {
	useScheme(b, scheme)
	requireIPyKernel(b)
	ctx := context.Background()
	var d []time.Duration
	for b.Loop() {
		t0 := time.Now()
		k, err := Start(ctx, Options{})
		d = append(d, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := k.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	reportMedian(b, d)
}

// BenchmarkRoundTripIPCAgainstTCP times `1+1` on two kernels in turn, one
// over ipc and one over loopback TCP, so both see the same load: a shared
// machine's load changes more between two benchmarks than the transports
// differ. It reports each one's median and their ratio.
func BenchmarkRoundTripIPCAgainstTCP(b *testing.B) {
	requireIPyKernel(b)
	useLocalTransport(b, "ipc")
	ipc := startKernel(b, Options{})
	useScheme(b, bufferedTCP)
	tcp := startKernel(b, Options{})
	ctx := context.Background()
	run := func(k *Kernel) time.Duration {
		t0 := time.Now()
		if _, err := k.Execute(ctx, roundTripCode, ExecuteOptions{}); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	for range warmUps {
		run(ipc)
		run(tcp)
	}
	var di, dt []time.Duration
	for i := 0; b.Loop(); i++ {
		// Each goes first in every other pair.
		if i%2 == 0 {
			di = append(di, run(ipc))
			dt = append(dt, run(tcp))
		} else {
			dt = append(dt, run(tcp))
			di = append(di, run(ipc))
		}
	}
	mi, mt := median(di), median(dt)
	b.ReportMetric(float64(mi)/float64(time.Millisecond), "ipc-ms/median")
	b.ReportMetric(float64(mt)/float64(time.Millisecond), "tcp-ms/median")
	b.ReportMetric(float64(mi)/float64(mt), "ipc/tcp")
}
