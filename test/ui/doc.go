// Package ui tests the admin UI (/ui) of the gateway internal/app builds, over real HTTP: its
// security rules with plain requests, and its pages in Debian's chromium driven headless through
// chromedp, against the go-sdk fixture as a real upstream.
package ui
