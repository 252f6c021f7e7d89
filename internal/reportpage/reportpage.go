// Package reportpage is what the self-contained HTML reports (audit --html, plan --html) share
// of their page: the style of the text, tables, summary cards and charts, so that both reports
// read as one tool's. Each report adds the style of its own marks after it.
package reportpage

// CSS is the shared style sheet, for inside the page's <style> element: the page loads nothing
// from elsewhere, so the style is written into it.
const CSS = `body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:20px;color:#222;background:#fff}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;font-size:12px;margin:4px 0} th,td{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f4f4f4} td.n{text-align:right;font-variant-numeric:tabular-nums}
.muted{color:#777} .bad{color:#b00} .ok{color:#070} .warn{color:#b60}
.cards{display:flex;gap:12px;flex-wrap:wrap;margin:12px 0}
.card{border:1px solid #ddd;border-radius:6px;padding:8px 14px;min-width:120px}
.card b{display:block;font-size:22px} .card.alert b{color:#b00}
svg text{font:11px system-ui,sans-serif;fill:#333}
`
