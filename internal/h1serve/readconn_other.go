//go:build !unix

package h1serve

// readConn reads from the connection into the buffer, which it holds while
// it waits.
func (rd *reader) readConn() (int, error) {
	rd.acquire()
	return rd.c.nc.Read(rd.buf[rd.w:])
}
