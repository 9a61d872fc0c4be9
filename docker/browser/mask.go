package browser

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/draw"
	"image/png"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/visorhq/visor/services/computer"
)

// sensitiveJS finds what a screenshot must not show, in CSS pixels of the
// viewport: password fields, payment-card fields (autocomplete cc-*, and
// names or ids that say card, cvc, cvv or iban), one-time codes, anything
// marked data-sensitive, and frames the page cannot look into (another
// origin's payment widget, say), masked whole. Same-origin frames are
// searched too.
const sensitiveJS = `(() => {
  const sel = 'input[type=password i],input[autocomplete^="cc-" i],input[autocomplete*=" cc-" i],' +
    'input[autocomplete="one-time-code" i],input[name*="card" i],input[id*="card" i],input[name*="cvc" i],' +
    'input[name*="cvv" i],input[id*="cvc" i],input[id*="cvv" i],input[name*="iban" i],[data-sensitive]';
  const out = [];
  const scan = (doc, dx, dy) => {
    for (const el of doc.querySelectorAll(sel)) {
      const r = el.getBoundingClientRect();
      if (r.width > 0 && r.height > 0) out.push([r.left + dx, r.top + dy, r.width, r.height]);
    }
    for (const f of doc.querySelectorAll('iframe,frame,object,embed')) {
      const r = f.getBoundingClientRect();
      if (r.width <= 0 || r.height <= 0) continue;
      let inner = null;
      try { inner = f.contentDocument; } catch (e) { inner = null; }
      if (inner) scan(inner, r.left + dx, r.top + dy); else out.push([r.left + dx, r.top + dy, r.width, r.height]);
    }
  };
  scan(document, 0, 0);
  return out;
})()`

// maskedShare is the share of the viewport above which the whole front
// window counts as sensitive.
const maskedShare = 0.5

// screenshot captures the viewport and paints every sensitive region over
// before the picture leaves the worker. The regions are measured before and
// after the capture and both sets are painted, so a field that moved in
// between is still covered. When anything is uncertain the whole picture is
// painted over and the reason given.
func (s *session) screenshot(ctx context.Context) (computer.Outcome, error) {
	full := func(reason string) (computer.Outcome, error) {
		return computer.Outcome{PNG: blank(s.spec.Width, s.spec.Height), FullyMasked: reason}, nil
	}
	infos, err := chromedp.Targets(ctx)
	if err != nil {
		return full(computer.MaskDetectionFail)
	}
	pages := 0
	for _, t := range infos {
		if t.Type == "page" {
			pages++
		}
	}
	if pages > 1 {
		return full(computer.MaskSeveralWindows)
	}
	before, err := chromedp.Run(ctx, chromedp.Evaluate[[][4]float64](sensitiveJS))
	if err != nil {
		return full(computer.MaskDetectionFail)
	}
	shot, err := chromedp.Call(ctx, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng})
	if err != nil {
		return full(computer.MaskUnreadable)
	}
	after, err := chromedp.Run(ctx, chromedp.Evaluate[[][4]float64](sensitiveJS))
	if err != nil {
		return full(computer.MaskDetectionFail)
	}
	img, err := png.Decode(bytes.NewReader(shot.Data))
	if err != nil {
		return full(computer.MaskUnreadable)
	}
	rects := append(before, after...)
	out, share := paint(img, rects)
	if share > maskedShare {
		return full(computer.MaskSensitiveFront)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, out); err != nil {
		return full(computer.MaskUnreadable)
	}
	return computer.Outcome{PNG: buf.Bytes(), Masked: len(before)}, nil
}

// paint covers each rectangle (grown by 2 pixels) in black and returns the
// share of the picture covered.
func paint(src image.Image, rects [][4]float64) (*image.RGBA, float64) {
	b := src.Bounds()
	dst := image.NewRGBA(b)
	draw.Draw(dst, b, src, b.Min, draw.Src)
	covered := image.NewAlpha(b)
	black := image.NewUniform(color.Black)
	for _, r := range rects {
		rr := image.Rect(int(r[0])-2, int(r[1])-2, int(r[0]+r[2])+3, int(r[1]+r[3])+3).Intersect(b)
		draw.Draw(dst, rr, black, image.Point{}, draw.Src)
		draw.Draw(covered, rr, image.NewUniform(color.Opaque), image.Point{}, draw.Src)
	}
	n := 0
	for _, a := range covered.Pix {
		if a != 0 {
			n++
		}
	}
	if b.Dx()*b.Dy() == 0 {
		return dst, 1
	}
	return dst, float64(n) / float64(b.Dx()*b.Dy())
}

// blank is a grey picture of the viewport's size.
func blank(w, h int) []byte {
	img := image.NewGray(image.Rect(0, 0, max(w, 1), max(h, 1)))
	for i := range img.Pix {
		img.Pix[i] = 0x80
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img)
	return buf.Bytes()
}
