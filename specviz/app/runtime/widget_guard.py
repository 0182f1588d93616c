"""A widget value of the wrong type from the websocket is ignored, not left to break the tab.

The browser sends each widget's value in a ``WidgetState`` whose ``value`` is one field of a oneof
(``int_value``, ``double_value``, ``string_value``, ...). Streamlit stores it as it came and converts it
when the widget is drawn or its on_change is considered (``WStates.__getitem__`` calls the widget's
deserializer). Its own frontend always sends the field the widget was declared with, but a crafted
client can send any: an integer ``st.number_input`` given ``double_value`` NaN or infinity, or
``string_value``, raises inside ``NumberInputSerde.deserialize`` (``int(nan)``, ``"abc" < 0``); a float
one given a string raises ``TypeError``; a ``text_input`` / ``text_area`` with ``max_chars`` given a
number raises ``TypeError`` (it slices the value). The bad value stays in the session's widget state,
so every later rerun of that tab raises again (``SessionState._compact_state`` converts it first) until
the tab is reloaded. Values of the right type are Streamlit's own business and already safe: an
integer out of [min, max] is reset to the widget's default, a text longer than ``max_chars`` is cut.

``install()`` changes two methods of ``WStates`` (the session's widget values), for these widget kinds
only (recognised by their deserializer's ``NumberInputSerde`` / ``TextInputSerde`` / ``TextAreaSerde``):
- ``set_widget_from_proto``: an incoming value the widget's deserializer cannot take (``misfit``: a
  number input takes ``int_value`` or ``double_value``, an integer one only finite; a text input or
  area with ``max_chars`` takes ``string_value``), for a widget drawn before in this session, is not
  stored: the widget keeps its previous value and no on_change fires;
- ``__getitem__``: a stored value whose widget is drawn only now (its metadata came after it, e.g. a
  session's first request) and does not fit is dropped and reported missing (``KeyError``, which
  Streamlit already answers for a value without metadata), so the widget gets its previous value or its
  default. Either way one warning line names the widget id and the two field names.
A value with no field set (a cleared input) passes, as before.

``tests/test_widget_guard.py`` sends the crafted values over a real websocket and checks the shape.

Upstream: streamlit/streamlit#16203 (open: "Server-side validation of client-side widget constraints":
widget constraints are enforced only in the browser, so a forged WidgetState reaches the deserializers).
The crash on a value of the wrong type is not reported on its own there (searched streamlit/streamlit).
Checked on: Streamlit 1.67.0 (the pin; ``specviz.app.runtime.CHECKED_ON``).
Without it: a hostile or broken client that sends such a value sees its own tab show a ValueError /
TypeError on that rerun and on every rerun after, until it reloads; other tabs are not affected.
To drop it: when Streamlit checks an incoming value's type against the widget before deserializing it
(#16203's "validate in the deserialize path"), delete this module and its name in
``app_runtime.PATCHES``; ``tests/test_widget_guard.py`` must still pass without it.
"""
from __future__ import annotations

import functools
import logging
import math

from specviz.app.runtime.shape_guard import install_once

_log = logging.getLogger(__name__)
UPSTREAM = "streamlit/streamlit#16203 (widget values are checked in the browser only)"  # what `specviz doctor` prints


def _guarded_kinds() -> tuple[type, ...]:
    from streamlit.elements.widgets.number_input import NumberInputSerde
    from streamlit.elements.widgets.text_widgets import TextAreaSerde, TextInputSerde

    return NumberInputSerde, TextInputSerde, TextAreaSerde


def misfit(metadata, proto, kinds: tuple[type, ...]) -> str | None:
    """What is wrong with ``proto`` for the guarded widget ``metadata`` describes (its field's name, or
    "non-finite double_value"), or None when it fits, is cleared, or the widget is not one of ``kinds``.

    A number input takes ``int_value`` or ``double_value`` (Streamlit's frontend sends the first for an
    integer input, the second for a float one; ``WidgetMetadata.value_type`` says "double_value" for both),
    an integer one only a finite double; a text input or text area with ``max_chars`` takes ``string_value``
    (without it Streamlit does not touch the value, so it is left to the page, which checks it)."""
    serde = getattr(getattr(metadata, "deserializer", None), "__self__", None)
    if not isinstance(serde, kinds):
        return None
    field = proto.WhichOneof("value")
    if field is None:
        return None
    number, text = kinds[0], kinds[1:]
    if isinstance(serde, number):
        if field == "int_value":
            return None
        if field == "double_value":
            from streamlit.proto.NumberInput_pb2 import NumberInput

            integer = serde.data_type == NumberInput.INT
            return "non-finite double_value" if integer and not math.isfinite(proto.double_value) else None
        return field
    if serde.max_chars is None:
        return None  # Streamlit hands any value through unchanged: the page's own checks see it (engines' seed)
    return None if field == "string_value" else field


def install() -> bool:
    """Patch Streamlit once per process; False (and a log line) if its shape is not the known one."""
    return install_once("widget guard", "_specviz_widget_guard", _shape, _patch, _log)


def _shape() -> tuple:
    from streamlit.runtime.state import session_state as ss

    kinds = _guarded_kinds()
    WStates = ss.WStates
    fields = getattr(getattr(ss, "WidgetMetadata", None), "__dataclass_fields__", {})
    known = (hasattr(WStates, "set_widget_from_proto") and hasattr(ss, "Serialized") and "value_type" in fields
             and "deserializer" in fields and all(hasattr(k, "deserialize") for k in kinds))
    return WStates, None if known else "WStates / WidgetMetadata lack the known shape", (ss, WStates, kinds)


def _patch(ss, WStates, kinds) -> None:
    set_from_proto, getitem, Serialized = WStates.set_widget_from_proto, WStates.__getitem__, ss.Serialized

    def refuse(wid: str, metadata, field: str) -> None:
        _log.warning("ignored a crafted value for widget %.80r (%s): it came as %s",
                     wid, type(metadata.deserializer.__self__).__name__, field)

    @functools.wraps(set_from_proto)
    def set_widget_from_proto(self, widget_state):
        metadata = self.widget_metadata.get(widget_state.id)
        field = misfit(metadata, widget_state, kinds)
        if field is not None:
            return refuse(widget_state.id, metadata, field)
        return set_from_proto(self, widget_state)

    @functools.wraps(getitem)
    def get_item(self, k):
        stored = self.states.get(k)
        if isinstance(stored, Serialized):
            metadata = self.widget_metadata.get(k)
            field = misfit(metadata, stored.value, kinds)
            if field is not None:
                del self.states[k]
                refuse(k, metadata, field)
                raise KeyError(k)
        return getitem(self, k)

    WStates.set_widget_from_proto = set_widget_from_proto
    WStates.__getitem__ = get_item
