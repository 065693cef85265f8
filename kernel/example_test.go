package kernel_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// Start a Python kernel, run code in it and print what it wrote to stdout.
func ExampleStart() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	k, err := kernel.Start(ctx, kernel.Options{Python: "python3"})
	if err != nil {
		log.Fatal(err)
	}
	defer k.Close()

	res, err := k.Execute(ctx, "print(6*7)", kernel.ExecuteOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, out := range res.Outputs {
		if out.Type == kernel.OutputStream && out.Name == "stdout" {
			fmt.Print(out.Text)
		}
	}
	// Output: 42
}
