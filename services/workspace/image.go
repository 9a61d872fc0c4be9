package workspace

import (
	"bytes"
	"image"
	"image/color"
	"image/draw"
	_ "image/gif" // decoders view_image accepts
	"image/jpeg"
	"image/png"

	"github.com/visorhq/visor/services/fault"
)

// Image limits: what view_image reads and what it returns.
const (
	MaxImageBytes         = 3 << 20
	MaxImagePixels        = 50_000_000
	DefaultImageDimension = 1568
	MaxImageReply         = 1 << 20
)

// Fitted is an image converted for a model.
type Fitted struct {
	MIMEType              string
	Data                  []byte
	Width, Height         int
	OrigWidth, OrigHeight int
	Resized               bool
}

// FitImage decodes a PNG, JPEG or GIF, scales it so its longer side is at
// most maxDim, and encodes it as PNG (when it has transparency) or JPEG,
// within MaxImageReply bytes.
func FitImage(raw []byte, maxDim int) (Fitted, error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(raw))
	if err != nil {
		return Fitted{}, fault.New(fault.Invalid, "not an image Visor can read (PNG, JPEG or GIF)")
	}
	if cfg.Width*cfg.Height > MaxImagePixels {
		return Fitted{}, fault.New(fault.TooLarge, "the image has %dx%d pixels; at most %d are read", cfg.Width, cfg.Height, MaxImagePixels)
	}
	src, _, err := image.Decode(bytes.NewReader(raw))
	if err != nil {
		return Fitted{}, fault.New(fault.Invalid, "the image could not be decoded")
	}
	f := Fitted{OrigWidth: cfg.Width, OrigHeight: cfg.Height}
	for dim := maxDim; dim >= 64; dim = dim * 3 / 4 {
		img := scale(src, dim)
		b := img.Bounds()
		f.Width, f.Height, f.Resized = b.Dx(), b.Dy(), b.Dx() != cfg.Width || b.Dy() != cfg.Height
		var buf bytes.Buffer
		if opaque(img) {
			f.MIMEType = "image/jpeg"
			err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 85})
		} else {
			f.MIMEType = "image/png"
			err = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img)
		}
		if err != nil {
			return Fitted{}, err
		}
		if buf.Len() <= MaxImageReply {
			f.Data = buf.Bytes()
			return f, nil
		}
	}
	return Fitted{}, fault.New(fault.TooLarge, "the image does not fit the reply limit even when small")
}

// scale returns src with its longer side at most dim, by averaging the
// source pixels each destination pixel covers.
func scale(src image.Image, dim int) image.Image {
	b := src.Bounds()
	w, h := b.Dx(), b.Dy()
	if w <= dim && h <= dim {
		dst := image.NewNRGBA(image.Rect(0, 0, w, h))
		draw.Draw(dst, dst.Bounds(), src, b.Min, draw.Src)
		return dst
	}
	nw, nh := dim, h*dim/w
	if h > w {
		nw, nh = w*dim/h, dim
	}
	nw, nh = max(nw, 1), max(nh, 1)
	dst := image.NewNRGBA(image.Rect(0, 0, nw, nh))
	for y := 0; y < nh; y++ {
		y0, y1 := b.Min.Y+y*h/nh, b.Min.Y+max((y+1)*h/nh, y*h/nh+1)
		for x := 0; x < nw; x++ {
			x0, x1 := b.Min.X+x*w/nw, b.Min.X+max((x+1)*w/nw, x*w/nw+1)
			var r, g, bl, a, n uint64
			for sy := y0; sy < y1; sy += max(1, (y1-y0)/4) {
				for sx := x0; sx < x1; sx += max(1, (x1-x0)/4) {
					c := color.NRGBAModel.Convert(src.At(sx, sy)).(color.NRGBA)
					r, g, bl, a, n = r+uint64(c.R), g+uint64(c.G), bl+uint64(c.B), a+uint64(c.A), n+1
				}
			}
			dst.SetNRGBA(x, y, color.NRGBA{uint8(r / n), uint8(g / n), uint8(bl / n), uint8(a / n)})
		}
	}
	return dst
}

func opaque(img image.Image) bool {
	if o, ok := img.(interface{ Opaque() bool }); ok {
		return o.Opaque()
	}
	return false
}
