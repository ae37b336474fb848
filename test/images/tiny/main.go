// Command tiny is the whole content of the test cluster's two local images (the pod sandbox's
// pause image and localhost/tiny): the cluster has no registry, so the project builds its images.
//
//	tiny               wait for SIGTERM (what a pause container does)
//	tiny printenv      print the sorted environment, then wait
//	tiny hello         print a line and exit
//
// It is named by its argv[0] too, so the pause image can run it as /pause.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"syscall"
)

func main() {
	mode := filepath.Base(os.Args[0])
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	switch mode {
	case "printenv":
		env := os.Environ()
		sort.Strings(env)
		for _, e := range env {
			fmt.Println(e)
		}
	case "hello":
		fmt.Println("hello from a locally built image")
		return
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
}
