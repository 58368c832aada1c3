"""The shell every HTML report shares: one self-contained page, and nothing it could fetch.

The page carries its CSS, JS and SVG inline, and a Content-Security-Policy that forbids the
browser to load anything at all (``default-src 'none'``; inline style and script only, images
only from ``data:``), so a report opened from disk makes no network request even if some text
in it looked like a link. Data the script needs travels as JSON in a
``<script type="application/json">`` block, escaped so no text can close it.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

__all__ = ["COLOURS", "CSP", "esc", "json_block", "page", "fmt"]

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src data:; connect-src 'none'; font-src 'none'; form-action 'none'; base-uri 'none'"
)

# One colour per state of a worker's lane (and the marks on it).
COLOURS = {
    "queued": "#c9ced6",
    "running": "#6b8fd6",
    "waiting": "#f0a830",
    "done": "#3aa76d",
    "failed": "#d64545",
    "cached": "#25a9c4",
    "cancelled": "#8a8f98",
    "refused": "#4a4d52",
    "repair": "#8e44ad",
    "check": "#e67e22",
}

_CSS = """
*{box-sizing:border-box}
body{font:13px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2430;
background:#f6f7f9}
header{background:#1d2430;color:#fff;padding:14px 22px}
header h1{font-size:18px;margin:0 0 4px}
header .sub{opacity:.8}
main{padding:10px 22px 40px;max-width:1400px}
section{background:#fff;border:1px solid #e1e4e8;border-radius:6px;margin:14px 0;padding:12px 16px}
h2{font-size:15px;margin:0 0 8px}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
th,td{padding:3px 10px;border-bottom:1px solid #eef0f2;text-align:right}
th:first-child,td:first-child{text-align:left}
th{font-weight:600;color:#4a5361}
.totals{display:flex;flex-wrap:wrap;gap:10px}
.totals div{background:#f1f3f6;border-radius:5px;padding:6px 12px}
.totals b{display:block;font-size:17px}
.legend span{display:inline-block;margin-right:14px}
.legend i{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:4px;
vertical-align:-2px}
svg text{font:11px system-ui,sans-serif;fill:#1d2430}
.lane,.agg{cursor:pointer}
.lane:hover rect.bg,.agg:hover rect.bg{fill:#e8eefc}
pre.src{background:#fbfbfc;border:1px solid #eef0f2;padding:8px 0;overflow:auto;max-height:520px}
pre.src span{display:block;padding:0 10px;white-space:pre}
pre.src span.phase{background:#fff4d6}
pre.src span:target{background:#ffe08a}
pre.src em{color:#98a1ad;font-style:normal;display:inline-block;width:3.2em;user-select:none}
#panel{position:fixed;top:0;right:0;width:min(620px,96vw);height:100vh;overflow:auto;
background:#fff;border-left:1px solid #cfd4da;box-shadow:-4px 0 16px rgba(0,0,0,.12);
padding:14px 18px;display:none}
#panel.open{display:block}
#panel .msg{border:1px solid #eef0f2;border-radius:5px;margin:8px 0;padding:6px 9px}
#panel .msg b{color:#4a5361}
#panel .msg pre{white-space:pre-wrap;word-break:break-word;margin:4px 0 0;font-size:12px}
#panel .close{float:right;cursor:pointer;border:0;background:#eef0f2;border-radius:4px;
padding:3px 9px}
.err{color:#b02a2a}
.note{color:#6a7380}
a{color:#2856b6}
"""

_JS = """
(function(){
var data=JSON.parse(document.getElementById('report-data').textContent);
var S=data.strings||[];
function t(i){return typeof i==='number'?S[i]:i}
var panel=document.getElementById('panel');
function el(tag,cls,text){var e=document.createElement(tag);if(cls)e.className=cls;
if(text!==undefined)e.textContent=text;return e}
function open(nodes){panel.textContent='';var b=el('button','close','close');
b.onclick=function(){panel.className=''};panel.appendChild(b);
nodes.forEach(function(n){panel.appendChild(n)});panel.className='open';panel.scrollTop=0}
function worker(id){var c=(data.conversations||{})[id];
panel.setAttribute('data-open',id);
if(!c){open([el('h2',null,'Worker '+id),el('p','note','No conversation was recorded.')]);return}
var nodes=[el('h2',null,'Worker '+id+' \\u2014 '+(c.label||'')),
el('p',null,'role '+(c.role||'-')+', model '+(c.model||'-')+', '+c.status)];
if(c.error)nodes.push(el('p','err',c.error));
var turn=0;c.messages.forEach(function(m){var d=el('div','msg');var head=t(m[0]);
if(head==='assistant'){var r=c.replies[turn++]||{};head+=' (turn '+turn+', '+
(r.cached?'from the ledger':'paid '+(r.billed||0))+', '+(r.seconds||0).toFixed(2)+' s)'}
d.appendChild(el('b',null,head));d.appendChild(el('pre',null,t(m[1])));nodes.push(d)});
if(c.truncated)nodes.push(el('p','note',c.truncated));open(nodes)}
function group(ids){panel.removeAttribute('data-open');
var nodes=[el('h2',null,ids.length+' workers')];
ids.forEach(function(id){var a=el('a',null,'worker '+id);a.href='#worker-'+id;
nodes.push(a);nodes.push(el('br'))});open(nodes)}
function fromHash(){var m=/^#worker-(\\d+)$/.exec(location.hash);if(m)worker(m[1])}
document.addEventListener('click',function(e){var n=e.target.closest('[data-worker],[data-group]');
if(!n)return;e.preventDefault();
if(n.hasAttribute('data-worker')){var h='#worker-'+n.getAttribute('data-worker');
if(location.hash===h)fromHash();else location.hash=h}
else group(JSON.parse(n.getAttribute('data-group')))});
window.addEventListener('hashchange',fromHash);
window.addEventListener('load',function(){fromHash();void document.body.offsetHeight;
document.body.setAttribute('data-rendered-ms',performance.now().toFixed(1))});
})();
"""


def esc(value: Any) -> str:
    return escape(str(value), quote=True)


def fmt(value: float, digits: int = 4) -> str:
    """A number for a person: up to ``digits`` significant digits, no float noise."""
    return f"{value:.{digits}g}"


def json_block(data: Any) -> str:
    """JSON that cannot end its ``<script>`` element early (``</`` and ``<!--`` escaped)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    text = text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return f'<script type="application/json" id="report-data">{text}</script>'


def page(title: str, subtitle: str, body: str, data: Any) -> str:
    """The whole HTML document: CSP, CSS, the body, the data, the script."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>"
        f'<header><h1>{esc(title)}</h1><div class="sub">{subtitle}</div></header>'
        f'<main>{body}</main><div id="panel"></div>{json_block(data)}<script>{_JS}</script>'
        "</body></html>\n"
    )
