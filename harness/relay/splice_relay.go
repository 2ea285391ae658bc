// splice_relay: a TCP relay on Go's standard library, the gosplice peer of
// benchmarks/relay_bench.py (harness/relay/peers.py).
//
// Every accepted stream is copied to a fresh connection to -target with io.Copy in each
// direction. Between two *net.TCPConn, io.Copy calls (*net.TCPConn).ReadFrom, which on
// Linux moves the bytes with splice(2) through a pipe (net/splice_linux.go), never through
// user space; Go sets TCP_NODELAY on every TCP connection by default. SIGTERM exits 0.
package main

import (
	"flag"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	listen := flag.String("listen", "", "host:port to accept streams on")
	target := flag.String("target", "", "host:port to relay each stream to")
	flag.Parse()
	if *listen == "" || *target == "" {
		log.Fatal("usage: splice-relay -listen HOST:PORT -target HOST:PORT")
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	go func() {
		<-stop
		os.Exit(0) // the kernel closes the listener and every stream
	}()
	for {
		conn, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go relay(conn.(*net.TCPConn), *target)
	}
}

func relay(client *net.TCPConn, target string) {
	defer client.Close()
	conn, err := net.Dial("tcp", target)
	if err != nil {
		log.Print(err)
		return
	}
	server := conn.(*net.TCPConn)
	defer server.Close()
	done := make(chan struct{}, 2)
	pump := func(dst, src *net.TCPConn) {
		io.Copy(dst, src)
		dst.CloseWrite()
		done <- struct{}{}
	}
	go pump(server, client)
	go pump(client, server)
	<-done
	<-done
}
