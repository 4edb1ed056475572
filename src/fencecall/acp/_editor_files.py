"""The editor's files: where the editor offers ``fs/read_text_file`` and
``fs/write_text_file``, the file tools read and write its buffers (unsaved changes
included) instead of the disk, once a path has passed the workspace rules."""

from __future__ import annotations

from pathlib import Path

from ._sessions import Link


class EditorFiles:
    """:class:`fencecall.tools.TextFiles` through the editor of session ``session_id``;
    a failed request is an :class:`OSError` with the editor's message."""

    def __init__(self, link: Link, session_id: str):
        self._link = link
        self._session_id = session_id

    def read(self, path: Path) -> str:
        try:
            answer = self._link.call(self._link.conn.read_text_file(
                session_id=self._session_id, path=str(path)))
        except Exception as err:
            raise OSError(f"the editor could not read {path}: {err}") from err
        return str(answer.content)

    def write(self, path: Path, text: str) -> None:
        try:
            self._link.call(self._link.conn.write_text_file(
                session_id=self._session_id, path=str(path), content=text))
        except Exception as err:
            raise OSError(f"the editor could not write {path}: {err}") from err
