// Command tiny is the whole content of the test cluster's two local images (the pod sandbox's
// pause image and localhost/tiny): the cluster has no registry, so the project builds its images.
//
//	tiny               wait for SIGTERM (what a pause container does)
//	tiny printenv      print the sorted environment, the mount points, the lines of
//	                   /overrideEnv (HAMi-core's limits file), what /etc/ld.so.preload
//	                   holds and whether HAMi-core's library is there, then wait
//	tiny hello         print a line and exit
//	sleep ..., bash ...  as tiny printenv: the image also holds it as /bin/sleep and /bin/bash,
//	                   so the tutorials' manifests (command ["sleep","infinity"] or
//	                   ["bash","-c","tail -f /dev/null"]) run with only their image changed,
//	                   and their containers' logs show what the device plugin gave them
//
// It is named by its argv[0] too, so the pause image can run it as /pause.
package main

import (
	"bufio"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

func main() {
	mode := filepath.Base(os.Args[0])
	switch {
	case mode == "sleep" || mode == "bash":
		mode = "printenv"
	case len(os.Args) > 1:
		mode = os.Args[1]
	}
	switch mode {
	case "printenv":
		env := os.Environ()
		sort.Strings(env)
		for _, e := range env {
			fmt.Println(e)
		}
		printMounts()
		printOverrideEnv()
		printHAMiCoreFiles()
	case "hello":
		fmt.Println("hello from a locally built image")
		return
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
}

// printMounts prints "mount <path> <ro|rw>" for every mount point, so tests can check what a
// device plugin mounted into the container.
func printMounts() {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		fmt.Println("mountinfo:", err)
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// mountinfo: id parent major:minor root mount-point options ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		mode := "rw"
		if strings.HasPrefix(fields[5], "ro") {
			mode = "ro"
		}
		fmt.Println("mount", fields[4], mode)
	}
}

// printOverrideEnv prints "overrideEnv <line>" for each line of the file the device plugin
// mounts at /overrideEnv, if there is one.
func printOverrideEnv() {
	data, err := os.ReadFile("/overrideEnv")
	if err != nil {
		return
	}
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		fmt.Println("overrideEnv", line)
	}
}

// printHAMiCoreFiles prints "preload <line>" for each line of /etc/ld.so.preload (or
// "preload error: ..."), and "library <size> bytes" for HAMi-core's library (or "library
// error: ..."): what the dynamic loader will find through whatever the image put at those
// paths.
func printHAMiCoreFiles() {
	if data, err := os.ReadFile("/etc/ld.so.preload"); err != nil {
		fmt.Println("preload error:", err)
	} else {
		for _, line := range strings.Fields(string(data)) {
			fmt.Println("preload", line)
		}
	}
	if fi, err := os.Stat("/usr/local/vgpu/libvgpu.so"); err != nil {
		fmt.Println("library error:", err)
	} else {
		fmt.Println("library", fi.Size(), "bytes")
	}
}
