package chromium

import (
	"image"
	"image/color"
	"slices"
	"testing"
)

func TestPalette(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	for y := 0; y < 4; y++ {
		for x := 0; x < 4; x++ {
			img.Set(x, y, color.RGBA{0xff, 0xff, 0xff, 0xff})
		}
	}
	img.Set(0, 0, color.RGBA{0xc0, 0x39, 0x2b, 0xff}) // red
	img.Set(2, 0, color.RGBA{0xd0, 0x40, 0x30, 0xff}) // a shade of it, within 24 a channel
	img.Set(1, 1, color.RGBA{0xc0, 0x39, 0x2b, 0xff}) // red, on no sample with step 2
	img.Set(2, 2, color.RGBA{0xc0, 0x60, 0x2b, 0xff}) // green too far off
	tests := []struct {
		step     int
		distinct int
		near     []int
	}{
		{1, 4, []int{3, 0}},
		{2, 4, []int{2, 0}},
	}
	for _, tc := range tests {
		distinct, near := Palette(img, tc.step, RGB{0xc0, 0x39, 0x2b}, RGB{0, 0, 0})
		if distinct != tc.distinct || !slices.Equal(near, tc.near) {
			t.Errorf("step %d: %d colours, near %v; want %d, %v", tc.step, distinct, near, tc.distinct, tc.near)
		}
	}
}
