"""A minimal FastAPI application over SQLAlchemy ORM models, numbered by `autonumbered`:
what an application outside the platform writes (its own engine, sessions and routes)."""

from collections.abc import Iterator
from contextlib import asynccontextmanager
from typing import Annotated

import sqlalchemy as sa
from fastapi import Depends, FastAPI, HTTPException
from pydantic import BaseModel
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import autonumber
from autonumber.integrations.common import ReadOnlyAutoNumber
from autonumber.integrations.sqlalchemy import autonumbered, unbind


class Base(DeclarativeBase):
    pass


class Ticket(Base):
    __tablename__ = "app_tickets"
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(sa.String(80))
    number: Mapped[str | None] = mapped_column(sa.String(20))


class NewTicket(BaseModel):
    title: str


class TicketChange(BaseModel):
    title: str | None = None
    number: str | None = None


def create_app(url: str) -> FastAPI:
    """The application on the database at `url` (its system tables made by `autonumber db init`)."""
    engine = sa.create_engine(url)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> Iterator[None]:  # type: ignore[misc]
        Base.metadata.create_all(engine)
        platform = autonumber.connect(url)
        autonumbered(Ticket.number, platform, format="TKT-{000000}")
        yield
        unbind(Ticket.number)
        platform.close()
        engine.dispose()

    app = FastAPI(lifespan=lifespan)

    def session() -> Iterator[Session]:
        with Session(engine) as s:
            yield s

    @app.post("/tickets", status_code=201)
    def create(body: NewTicket, s: Annotated[Session, Depends(session)]) -> dict[str, object]:
        ticket = Ticket(title=body.title)
        s.add(ticket)
        s.commit()
        return {"id": ticket.id, "number": ticket.number}

    @app.patch("/tickets/{ticket_id}")
    def change(
        ticket_id: int, body: TicketChange, s: Annotated[Session, Depends(session)]
    ) -> dict[str, object]:
        ticket = s.get(Ticket, ticket_id)
        if ticket is None:
            raise HTTPException(404, f"no ticket {ticket_id}")
        try:
            for key, value in body.model_dump(exclude_unset=True).items():
                setattr(ticket, key, value)
        except ReadOnlyAutoNumber as exc:
            raise HTTPException(409, str(exc)) from None
        s.commit()
        return {"id": ticket.id, "title": ticket.title, "number": ticket.number}

    return app
