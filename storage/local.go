package storage

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/dds-project/dds/apperr"
)

// LocalRoute is the path prefix under which the DDS server serves local
// presigned URLs: PUT and GET {PublicURL}/api/v1/storage/{token}. It is a
// public route (the token is the credential).
const LocalRoute = "/api/v1/storage/"

// Local stores objects as files under a directory. Presigned URLs carry an
// HMAC-SHA256-signed token (operation, key, content type, size, expiry,
// download name) and are served by ServeUpload / ServeDownload.
//
// Status codes of the local store, mirroring what S3 refuses:
//   - 403 FORBIDDEN: bad, tampered or expired signature, or a token for the
//     other operation.
//   - 411 is not used: a PUT without Content-Length (chunked) is 400 BAD_REQUEST.
//   - 413 PAYLOAD_TOO_LARGE: Content-Length above the signed size.
//   - 400 BAD_REQUEST: Content-Length below the signed size, a body shorter than
//     announced, or a Content-Type other than the signed one.
//   - 404 NOT_FOUND: GET of an object that is not stored.
//   - 409 CONFLICT: PUT to a key that already holds an object.
//
// Uploads stream to a temporary file in the target directory and are renamed
// into place only when complete, so a failed upload leaves nothing behind.
type Local struct {
	dir    string
	secret []byte
	public string
	now    func() time.Time
}

// NewLocal builds the local driver. An empty secret is read from (or
// generated into) dir/.signing-key so the server and worker agree.
func NewLocal(dir, secret, publicURL string) (*Local, error) {
	if dir == "" {
		dir = ".dds/files"
	}
	if publicURL == "" {
		return nil, errors.New("storage: DDS_PUBLIC_URL is required for the local driver")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("storage: local dir: %w", err)
	}
	key := []byte(secret)
	if secret == "" {
		var err error
		if key, err = loadOrCreateKey(filepath.Join(dir, ".signing-key")); err != nil {
			return nil, err
		}
	}
	return &Local{dir: dir, secret: key, public: strings.TrimRight(publicURL, "/"), now: time.Now}, nil
}

// loadOrCreateKey reads or creates the signing key at path, which NewLocal builds as
// <FILE_STORAGE_LOCAL_DIR>/.signing-key: operator configuration plus a constant name, never
// request input (object keys go through Local.path, which confines them to the directory).
func loadOrCreateKey(path string) ([]byte, error) {
	//nolint:gosec // G304: path is the operator-configured storage dir + ".signing-key", not request input.
	if b, err := os.ReadFile(path); err == nil && len(b) >= 32 {
		return b, nil
	}
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600) //nolint:gosec // G304: see loadOrCreateKey: operator-configured dir + constant name.
	if errors.Is(err, fs.ErrExist) {
		// Another process won the race; wait for its key to be complete.
		for i := 0; i < 100; i++ {
			if b, err := os.ReadFile(path); err == nil && len(b) >= 32 { //nolint:gosec // G304: as above.
				return b, nil
			}
			time.Sleep(10 * time.Millisecond)
		}
		return nil, fmt.Errorf("storage: signing key %s is incomplete", path)
	}
	if err != nil {
		return nil, fmt.Errorf("storage: signing key: %w", err)
	}
	defer f.Close()
	if _, err := f.Write(k); err != nil {
		return nil, fmt.Errorf("storage: signing key: %w", err)
	}
	return k, nil
}

type localToken struct {
	Op   string `json:"o"`
	Key  string `json:"k"`
	Type string `json:"t,omitempty"`
	Size int64  `json:"s,omitempty"`
	Exp  int64  `json:"e"`
	Name string `json:"n,omitempty"`
}

var keyPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*$`)

func (l *Local) path(key string) (string, error) {
	if !keyPattern.MatchString(key) || strings.Contains(key, "..") {
		return "", fmt.Errorf("storage: invalid object key %q", key)
	}
	return filepath.Join(l.dir, filepath.FromSlash(key)), nil
}

func (l *Local) sign(t localToken) string {
	payload, _ := json.Marshal(t)
	mac := hmac.New(sha256.New, l.secret)
	mac.Write(payload)
	enc := base64.RawURLEncoding
	return enc.EncodeToString(payload) + "." + enc.EncodeToString(mac.Sum(nil))
}

func (l *Local) verify(token, op string) (localToken, error) {
	forbidden := apperr.New(apperr.Forbidden, "invalid or expired storage signature")
	enc := base64.RawURLEncoding.Strict()
	p, s, ok := strings.Cut(token, ".")
	if !ok {
		return localToken{}, forbidden
	}
	payload, err1 := enc.DecodeString(p)
	sig, err2 := enc.DecodeString(s)
	if err1 != nil || err2 != nil {
		return localToken{}, forbidden
	}
	mac := hmac.New(sha256.New, l.secret)
	mac.Write(payload)
	if !hmac.Equal(sig, mac.Sum(nil)) {
		return localToken{}, forbidden
	}
	var t localToken
	if err := json.Unmarshal(payload, &t); err != nil || t.Op != op {
		return localToken{}, forbidden
	}
	if l.now().Unix() >= t.Exp {
		return localToken{}, apperr.New(apperr.Forbidden, "storage URL has expired")
	}
	if _, err := l.path(t.Key); err != nil {
		return localToken{}, forbidden
	}
	return t, nil
}

func (l *Local) url(t localToken) string { return l.public + LocalRoute + l.sign(t) }

// PresignPut implements Driver.
func (l *Local) PresignPut(_ context.Context, key, contentType string, size int64, ttl time.Duration) (string, error) {
	if _, err := l.path(key); err != nil {
		return "", err
	}
	return l.url(localToken{Op: "put", Key: key, Type: contentType, Size: size, Exp: l.now().Add(ttl).Unix()}), nil
}

// PresignGet implements Driver.
func (l *Local) PresignGet(_ context.Context, key, fileName, contentType string, ttl time.Duration) (string, error) {
	if _, err := l.path(key); err != nil {
		return "", err
	}
	return l.url(localToken{Op: "get", Key: key, Type: contentType, Name: fileName, Exp: l.now().Add(ttl).Unix()}), nil
}

type localMeta struct {
	ContentType string `json:"contentType"`
}

// Head implements Driver.
func (l *Local) Head(_ context.Context, key string) (ObjectInfo, error) {
	p, err := l.path(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	st, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return ObjectInfo{}, ErrNotFound
	}
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("storage: head %s: %w", key, err)
	}
	var m localMeta
	//nolint:gosec // G304: p comes from l.path, which confines key to l.dir (pattern, no "..").
	if b, err := os.ReadFile(p + ".meta"); err == nil {
		_ = json.Unmarshal(b, &m)
	}
	return ObjectInfo{Size: st.Size(), ContentType: m.ContentType}, nil
}

// Open implements Driver.
func (l *Local) Open(_ context.Context, key string) (io.ReadCloser, error) {
	p, err := l.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p) //nolint:gosec // G304: p comes from l.path, which confines key to l.dir.
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", key, err)
	}
	return f, nil
}

// Delete implements Driver.
func (l *Local) Delete(_ context.Context, key string) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	for _, f := range []string{p, p + ".meta"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("storage: delete %s: %w", key, err)
		}
	}
	return nil
}

// Routes registers the local driver's presigned-URL routes with handle:
// PUT {LocalRoute}{token} (ServeUpload) and GET {LocalRoute}{token}
// (ServeDownload, HEAD too). They are public routes: the token is the
// credential. writeErr renders the error a route returns (the DDS server
// passes the writer of all its routes, api.WriteError); nil answers it as
// plain text with the status of the table on Local, the statuses S3 gives
// the same refusals (what test fixtures below the HTTP layer need).
func (l *Local) Routes(handle func(pattern string, h http.Handler), writeErr func(http.ResponseWriter, *http.Request, error)) {
	if writeErr == nil {
		writeErr = writePlainError
	}
	for _, rt := range []struct {
		method string
		serve  func(http.ResponseWriter, *http.Request) error
	}{{http.MethodPut, l.ServeUpload}, {http.MethodGet, l.ServeDownload}} {
		handle(rt.method+" "+LocalRoute+"{token}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := rt.serve(w, r); err != nil {
				writeErr(w, r, err)
			}
		}))
	}
}

// localStatus is the status of each code the local routes return (see
// Local); anything else, such as a wrapped disk error, is a 500.
var localStatus = map[apperr.Code]int{
	apperr.BadRequest: http.StatusBadRequest, apperr.Forbidden: http.StatusForbidden, apperr.NotFound: http.StatusNotFound,
	apperr.Conflict: http.StatusConflict, apperr.TooLarge: http.StatusRequestEntityTooLarge,
}

func writePlainError(w http.ResponseWriter, _ *http.Request, err error) {
	e := apperr.As(err)
	status, ok := localStatus[e.Code]
	if !ok {
		status = http.StatusInternalServerError
	}
	http.Error(w, string(e.Code)+": "+e.Message, status)
}

// ServeUpload handles PUT {LocalRoute}{token}: the body is streamed to disk,
// never buffered, and must match the signed size and content type exactly.
// An object is written once: a PUT to a key that holds one is a CONFLICT.
// On success it answers 200; an error is returned unwritten, for the HTTP
// layer to render.
func (l *Local) ServeUpload(w http.ResponseWriter, r *http.Request) error {
	t, err := l.verify(r.PathValue("token"), "put")
	if err != nil {
		return err
	}
	switch {
	case r.ContentLength < 0:
		return apperr.New(apperr.BadRequest, "Content-Length is required and must be %d", t.Size)
	case r.ContentLength > t.Size:
		return apperr.New(apperr.TooLarge, "upload is %d bytes; this URL accepts exactly %d", r.ContentLength, t.Size)
	case r.ContentLength < t.Size:
		return apperr.New(apperr.BadRequest, "upload is %d bytes; this URL accepts exactly %d", r.ContentLength, t.Size)
	}
	if ct := r.Header.Get("Content-Type"); ct != t.Type {
		return apperr.New(apperr.BadRequest, "Content-Type %q does not match the signed type %q", ct, t.Type)
	}
	if _, err := l.Head(r.Context(), t.Key); err == nil {
		return errStored // refused before reading the body
	}
	if err := l.store(t, http.MaxBytesReader(w, r.Body, t.Size)); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

var errStored = apperr.New(apperr.Conflict, "an object was already uploaded with this URL; stored objects cannot be replaced")

func (l *Local) store(t localToken, body io.Reader) (err error) {
	p, _ := l.path(t.Key)
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return apperr.Wrap(err, "storage unavailable")
	}
	tmp, err := os.CreateTemp(dir, ".upload-*")
	if err != nil {
		return apperr.Wrap(err, "storage unavailable")
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	buf := copyBufs.Get().(*[]byte)
	n, err := io.CopyBuffer(struct{ io.Writer }{tmp}, body, *buf)
	copyBufs.Put(buf)
	if err != nil || n != t.Size {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return apperr.New(apperr.TooLarge, "upload exceeds the signed size of %d bytes", t.Size)
		}
		return apperr.New(apperr.BadRequest, "upload ended after %d of %d bytes", n, t.Size)
	}
	if err = tmp.Sync(); err != nil {
		return apperr.Wrap(err, "storage unavailable")
	}
	if err = tmp.Close(); err != nil {
		return apperr.Wrap(err, "storage unavailable")
	}
	// Link, unlike rename, fails when p exists: of two racing uploads one
	// wins and the object is never replaced.
	if err = os.Link(tmp.Name(), p); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return errStored
		}
		return apperr.Wrap(err, "storage unavailable")
	}
	_ = os.Remove(tmp.Name())
	meta, _ := json.Marshal(localMeta{ContentType: t.Type})
	if err := writeFileAtomic(p+".meta", meta); err != nil {
		return apperr.Wrap(err, "storage unavailable")
	}
	return nil
}

// copyBufs holds the upload copy buffers: 256 KiB per upload in flight, so
// memory stays bounded whatever the file size.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".meta-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// ServeDownload handles GET (and HEAD) {LocalRoute}{token}, with range
// support, the original file name in Content-Disposition. An error is
// returned before anything is written, for the HTTP layer to render.
func (l *Local) ServeDownload(w http.ResponseWriter, r *http.Request) error {
	t, err := l.verify(r.PathValue("token"), "get")
	if err != nil {
		return err
	}
	p, _ := l.path(t.Key) // cannot fail: verify has just checked t.Key with l.path
	//nolint:gosec // G304: p comes from l.path, which confines the HMAC-verified key to l.dir.
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return apperr.New(apperr.NotFound, "object not found")
		}
		return apperr.Wrap(err, "storage unavailable")
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return apperr.Wrap(err, "storage unavailable")
	}
	ct := t.Type
	if ct == "" {
		if info, err := l.Head(r.Context(), t.Key); err == nil {
			ct = info.ContentType
		}
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	if t.Name != "" {
		w.Header().Set("Content-Disposition", ContentDisposition(t.Name))
	}
	http.ServeContent(sendfileWriter(w), r, "", st.ModTime(), f)
	return nil
}

// sendfileWriter lets http.ServeContent reach the connection's ReadFrom
// (sendfile) through middleware wrappers that expose Unwrap, while headers
// and status still pass through the wrappers.
func sendfileWriter(w http.ResponseWriter) http.ResponseWriter {
	if _, ok := w.(io.ReaderFrom); ok {
		return w
	}
	inner := w
	for {
		u, ok := inner.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		inner = u.Unwrap()
		if rf, ok := inner.(io.ReaderFrom); ok {
			return readFromWriter{w, rf}
		}
	}
}

type readFromWriter struct {
	http.ResponseWriter
	rf io.ReaderFrom
}

func (w readFromWriter) ReadFrom(r io.Reader) (int64, error) { return w.rf.ReadFrom(r) }
